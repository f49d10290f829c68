"""The sandbox pages in creation order, also past ids whose digits grow (rma_9999 → rma_10000)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from sandbox.app import DEMO_KEY, create_app
from sandbox.data import seed


def test_cursor_pages_cover_every_return_once_across_a_digit_boundary() -> None:
    data = seed(returns=3100)  # ids run from rma_7001 past rma_10000
    assert any(len(key) != len(next(iter(data.returns))) for key in data.returns)
    seen: list[str] = []
    cursor = None
    with TestClient(create_app(data)) as client:
        while True:
            params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            page = client.get(
                "/store/returns", params=params, headers={"Authorization": f"Bearer {DEMO_KEY}"}
            ).json()
            seen += [r["id"] for r in page["data"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seen == list(data.returns)
