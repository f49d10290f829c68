"""One module per resource. A module's ``router`` is mounted under /v1 behind API-token auth;
an optional ``public_router`` is mounted at the root without it (e.g. the connect page's
endpoints, authorized by a link token instead)."""

from __future__ import annotations

import importlib
import pkgutil

from fastapi import APIRouter

# Matched first: Starlette tries routes in order, and these carry the traffic.
HOT_MODULES = ("unified", "proxy")


def discover_routers() -> tuple[list[APIRouter], list[APIRouter]]:
    """(authenticated /v1 routers, public root routers) of every route module: the hot ones
    first, then by module name."""
    private, public = [], []
    order = {name: rank for rank, name in enumerate(HOT_MODULES)}
    modules = sorted(pkgutil.iter_modules(__path__), key=lambda m: (order.get(m.name, 99), m.name))
    for module_info in modules:
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        if isinstance(router := getattr(module, "router", None), APIRouter):
            private.append(router)
        if isinstance(router := getattr(module, "public_router", None), APIRouter):
            public.append(router)
    return private, public
