"""``python -m sandbox``: serve the sandbox upstream (``switchyard run`` does).

python -m sandbox [--orders N]   # a bigger store, e.g. for benchmarks
"""

from __future__ import annotations

import argparse

import uvicorn

from core.settings import get_settings
from sandbox.app import create_app
from sandbox.data import seed


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the sandbox upstream.")
    parser.add_argument("--orders", type=int, default=120, help="Orders in the store.")
    args = parser.parse_args()
    settings = get_settings()
    uvicorn.run(
        create_app(seed(orders=args.orders)),
        host=settings.sandbox_host,
        port=settings.sandbox_port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
