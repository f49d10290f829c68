"""A faithful local Pipedrive API v1 subset (persons, organizations).

Auth by the ``api_token`` query parameter. Lists: ``{"success": true, "data": [...],
"additional_data": {"pagination": {"start", "limit", "more_items_in_collection",
"next_start"}}}`` paged by ``start``/``limit`` (limit at most 500; ``data`` is null past the
end). Times are ``YYYY-MM-DD HH:MM:SS`` in UTC. Errors: ``{"success": false, "error",
"error_info", "data": null, "additional_data": null}``; 429 carries ``Retry-After`` and the
``x-ratelimit-*`` headers.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware.base import RequestResponseEndpoint

from tests.platform_api.unified.fakes.common import FakeState, install_recorder

TOKEN = "pd_fake_api_token"
EPOCH = datetime(2025, 1, 10, 9, 30, tzinfo=UTC)
INFO = "Please check developers.pipedrive.com for more information about Pipedrive API."


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def failure(status: int, message: str) -> JSONResponse:
    body = {"success": False, "error": message, "error_info": INFO, "data": None,
            "additional_data": None}  # fmt: skip
    return JSONResponse(body, status_code=status)


def _org_ref(org: dict[str, Any] | None) -> dict[str, Any] | None:
    if org is None:
        return None
    return {
        "name": org["name"], "people_count": 1, "owner_id": 1, "address": org["address"],
        "active_flag": True, "cc_email": "acme@pipedrivemail.com", "value": org["id"],
    }  # fmt: skip


def build_data(persons: int = 160, organizations: int = 60) -> dict[str, Any]:
    orgs: dict[int, dict[str, Any]] = {}
    for i in range(organizations):
        created = EPOCH + timedelta(hours=2 * i)
        orgs[i + 1] = {
            "id": i + 1, "company_id": 777, "name": f"Org {i + 1}", "owner_id": {"id": 1},
            "address": f"{i + 1} Harbor Rd, Tallinn", "address_locality": "Tallinn",
            "address_country": "Estonia", "active_flag": True, "visible_to": "3",
            "add_time": _ts(created), "update_time": _ts(created + timedelta(minutes=5)),
        }  # fmt: skip
    people: dict[int, dict[str, Any]] = {}
    for i in range(persons):
        created = EPOCH + timedelta(minutes=45 * i)
        org = orgs[(i % organizations) + 1] if i % 5 else None
        people[i + 1] = {
            "id": i + 1, "company_id": 777, "owner_id": {"id": 1, "name": "Owner"},
            "org_id": _org_ref(org), "name": f"Given{i} Family{i}", "first_name": f"Given{i}",
            "last_name": f"Family{i}", "active_flag": True,
            "phone": [{"label": "work", "value": f"+372 555 {1000 + i}", "primary": True}],
            "email": [{"label": "work", "value": f"given{i}@example.com", "primary": True}],
            "add_time": _ts(created), "update_time": _ts(created + timedelta(minutes=1)),
            "visible_to": "3",
        }  # fmt: skip
    return {"persons": people, "organizations": orgs}


def create_app(data: dict[str, Any] | None = None) -> tuple[FastAPI, FakeState]:
    rows = data or build_data()
    state = FakeState()
    app = FastAPI()
    install_recorder(app, state)
    counter = {"next": 10_000}
    labels = {"persons": "Person", "organizations": "Organization"}

    @app.middleware("http")
    async def _auth(request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.query_params.get("api_token") != TOKEN:
            body = {"success": False, "error": "unauthorized access", "errorCode": 401,
                    "error_info": INFO}  # fmt: skip
            return JSONResponse(body, status_code=401)
        return await call_next(request)

    @app.get("/{kind}")
    def list_items(kind: str, request: Request) -> Response:
        if kind not in rows:
            return failure(404, "Unknown method .")
        try:
            start = int(request.query_params.get("start", "0"))
            limit = int(request.query_params.get("limit", "100"))
        except ValueError:
            return failure(400, "Invalid start or limit")
        if not 1 <= limit <= 500:
            return failure(400, "limit must be between 1 and 500")
        items = list(rows[kind].values())
        page = items[start : start + limit]
        more = start + limit < len(items)
        pagination = {"start": start, "limit": limit, "more_items_in_collection": more}
        if more:
            pagination["next_start"] = start + limit
        return JSONResponse({"success": True, "data": page or None,
                             "additional_data": {"pagination": pagination}})  # fmt: skip

    @app.get("/{kind}/{item_id}")
    def get_item(kind: str, item_id: int) -> Response:
        item = rows.get(kind, {}).get(item_id)
        if item is None:
            return failure(404, f"{labels.get(kind, 'Item')} not found")
        return JSONResponse({"success": True, "data": item})

    def apply(kind: str, item: dict[str, Any], payload: dict[str, Any]) -> None:
        if "name" in payload:
            item["name"] = payload["name"]
            if kind == "persons":
                first, _, last = payload["name"].partition(" ")
                item["first_name"], item["last_name"] = first, last
        for key in ("email", "phone"):
            if key in payload and kind == "persons":
                value = payload[key]
                values = value if isinstance(value, list) else [{"value": value}]
                item[key] = [
                    {"label": "work", "primary": n == 0, **v} for n, v in enumerate(values)
                ]
        if "org_id" in payload and kind == "persons":
            item["org_id"] = _org_ref(rows["organizations"].get(payload["org_id"]))
        for key in ("address", "address_locality", "address_country"):
            if key in payload and kind == "organizations":
                item[key] = payload[key]
        item["update_time"] = _ts(datetime.now(UTC))

    @app.post("/{kind}")
    async def create_item(kind: str, request: Request) -> Response:
        payload = await request.json()
        if not payload.get("name"):
            return failure(400, "Name must be given.")
        counter["next"] += 1
        now = _ts(datetime.now(UTC))
        item: dict[str, Any] = {
            "id": counter["next"], "add_time": now, "update_time": now, "org_id": None,
            "email": [], "phone": [], "active_flag": True,
        }  # fmt: skip
        apply(kind, item, payload)
        rows[kind][item["id"]] = item
        return JSONResponse({"success": True, "data": item}, status_code=201)

    @app.put("/{kind}/{item_id}")
    async def update_item(kind: str, item_id: int, request: Request) -> Response:
        item = rows.get(kind, {}).get(item_id)
        if item is None:
            return failure(404, f"{labels.get(kind, 'Item')} not found")
        apply(kind, item, await request.json())
        return JSONResponse({"success": True, "data": item})

    @app.delete("/{kind}/{item_id}")
    def delete_item(kind: str, item_id: int) -> Response:
        if rows.get(kind, {}).pop(item_id, None) is None:
            return failure(404, f"{labels.get(kind, 'Item')} not found")
        return JSONResponse({"success": True, "data": {"id": item_id}})

    return app, state
