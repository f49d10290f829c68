"""``python -m platform_api.sandbox``: serve the sandbox upstream (``switchyard run`` does)."""

from __future__ import annotations

import uvicorn

from core.settings import get_settings
from platform_api.sandbox.app import create_app


def main() -> None:
    settings = get_settings()
    uvicorn.run(
        create_app(),
        host=settings.sandbox_host,
        port=settings.sandbox_port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
