"""Joining the Ray cluster from a process that did not start it (launcher, CLI, HTTP front)."""

from __future__ import annotations

from core.log_config import adopt_loggers


def connect_ray(address: str | None) -> None:
    """Join the cluster at ``address`` (RAY_ADDRESS), or the local one Ray finds, once.

    ``ray.init()`` starts a local cluster with token authentication and sets RAY_AUTH_MODE
    only in its own process, and Ray turns token mode on from ``~/.ray/auth_token`` only when
    it finds a local cluster by itself, never for an explicit address. A child of
    ``switchyard run`` (or any process given RAY_ADDRESS) applies that same rule here, so it
    is not refused by its own local cluster. An explicit RAY_AUTH_MODE always wins.
    """
    import ray

    if ray.is_initialized():
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # another Ray version: RAY_AUTH_MODE must be set by the caller
        pass
    else:
        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    ray.init(address=address or "auto", logging_level="WARNING", log_to_driver=False)
    # Ray's Python loggers print in a format of their own: use the process's.
    adopt_loggers("ray", "ray.serve")
