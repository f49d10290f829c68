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


def test_paging_goes_on_after_records_deleted_between_pages_the_cursors_one_included() -> None:
    data = seed(returns=250)  # ids of one length: rma_7001 … rma_7250
    keys = list(data.returns)
    headers = {"Authorization": f"Bearer {DEMO_KEY}"}
    with TestClient(create_app(data)) as client:
        first = client.get("/store/returns", params={"limit": 100}, headers=headers).json()
        cursor = first["next_cursor"]
        assert cursor == keys[99]
        for key in (cursor, keys[150]):  # the cursor's own record, and one further on
            assert client.delete(f"/store/returns/{key}", headers=headers).status_code == 204
        rest: list[str] = []
        while cursor is not None:
            page = client.get(
                "/store/returns", params={"limit": 100, "cursor": cursor}, headers=headers
            ).json()
            rest += [r["id"] for r in page["data"]]
            cursor = page["next_cursor"]
    assert rest == [key for key in keys[100:] if key != keys[150]]
