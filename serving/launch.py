"""``python -m serving.launch``: deploy the Serve config onto RAY_ADDRESS and wait until it serves.

Exits 0 once the intent classifier answers, non-zero if it fails to deploy.
"""

from __future__ import annotations

import logging
import sys

from platform_api.settings import Settings, get_settings
from serving import ray_connect
from serving.deploy import deploy, serve_config_for

log = logging.getLogger("serving.launch")


def connect_ray(settings: Settings) -> None:
    """Join the cluster named by RAY_ADDRESS (or the local one Ray finds)."""
    ray_connect.connect_ray(settings.ray_address)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = get_settings()
    try:
        connect_ray(settings)
        config = serve_config_for(settings)
        version = deploy(config)
    except Exception:
        log.exception("the intent classifier failed to deploy")
        return 1
    log.info("intent classifier serving model %s", version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
