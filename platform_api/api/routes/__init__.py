"""One module per resource. A module's ``router`` is mounted under /v1 behind API-token auth;
an optional ``public_router`` is mounted at the root without it (e.g. the connect page's
endpoints, authorized by a link token instead)."""

from __future__ import annotations

import importlib
import pkgutil

from fastapi import APIRouter


def discover_routers() -> tuple[list[APIRouter], list[APIRouter]]:
    """(authenticated /v1 routers, public root routers) of every route module, by module name."""
    private, public = [], []
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        if isinstance(router := getattr(module, "router", None), APIRouter):
            private.append(router)
        if isinstance(router := getattr(module, "public_router", None), APIRouter):
            public.append(router)
    return private, public
