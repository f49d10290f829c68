"""A faithful local HubSpot CRM v3 objects API subset (contacts, companies).

``GET /crm/v3/objects/{type}?limit&after&properties`` answers ``{"results": [...],
"paging": {"next": {"after", "link"}}}`` (limit at most 100); records are ``{id, properties,
createdAt, updatedAt, archived}``. Create answers 201, archive (DELETE) 204. Errors are
``{"status": "error", "message", "correlationId", "category"}``; 429 adds ``errorType:
RATE_LIMIT`` and ``policyName`` (HubSpot does not promise a Retry-After header).
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware.base import RequestResponseEndpoint

from tests.platform_api.unified.fakes.common import FakeState, install_recorder

TOKEN = "pat-na1-fake"
EPOCH = datetime(2025, 2, 1, 12, 0, tzinfo=UTC)
DEFAULT_PROPERTIES = {
    "contacts": [
        "createdate",
        "email",
        "firstname",
        "hs_object_id",
        "lastmodifieddate",
        "lastname",
    ],
    "companies": ["createdate", "domain", "hs_lastmodifieddate", "hs_object_id", "name"],
}
WRITABLE = {
    "contacts": {"email", "firstname", "lastname", "phone", "associatedcompanyid"},
    "companies": {"name", "domain", "phone", "city", "country"},
}


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def error(status: int, message: str, category: str, **extra: Any) -> JSONResponse:
    body = {"status": "error", "message": message, "correlationId": str(uuid.uuid4()),
            "category": category, **extra}  # fmt: skip
    return JSONResponse(body, status_code=status)


def build_data(contacts: int = 130, companies: int = 70, seed: int = 11) -> dict[str, Any]:
    rng = random.Random(seed)
    rows: dict[str, dict[str, dict[str, Any]]] = {"contacts": {}, "companies": {}}
    for i in range(companies):
        oid = str(9_000 + i)
        created = EPOCH + timedelta(hours=i)
        rows["companies"][oid] = {
            "id": oid,
            "properties": {"name": f"Company {i}", "domain": f"company{i}.example",
                           "phone": f"+1 617 555 {1000 + i}", "city": "Boston", "country": "US",
                           "createdate": _ts(created), "hs_lastmodifieddate": _ts(created),
                           "hs_object_id": oid},
            "createdAt": _ts(created), "updatedAt": _ts(created), "archived": False,
        }  # fmt: skip
    for i in range(contacts):
        oid = str(100 + i)
        created = EPOCH + timedelta(minutes=30 * i)
        rows["contacts"][oid] = {
            "id": oid,
            "properties": {"email": f"person{i}@example.com", "firstname": f"First{i}",
                           "lastname": f"Last{i}", "phone": f"+1 617 555 {2000 + i}",
                           "associatedcompanyid": str(9_000 + rng.randrange(companies)),
                           "createdate": _ts(created), "lastmodifieddate": _ts(created),
                           "hs_object_id": oid},
            "createdAt": _ts(created), "updatedAt": _ts(created), "archived": False,
        }  # fmt: skip
    return rows


def _view(record: dict[str, Any], kind: str, properties: list[str] | None) -> dict[str, Any]:
    wanted = properties or DEFAULT_PROPERTIES[kind]
    props = {k: record["properties"].get(k) for k in wanted}
    return {**record, "properties": props}


def create_app(data: dict[str, Any] | None = None) -> tuple[FastAPI, FakeState]:
    rows = data or build_data()
    state = FakeState()
    app = FastAPI()
    install_recorder(app, state)
    counter = {"next": 50_000}

    @app.middleware("http")
    async def _auth(request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return error(
                401,
                "Authentication credentials not found. This API supports OAuth 2.0 "
                "authentication and you can find more details at "
                "https://developers.hubspot.com/docs/methods/auth/oauth-overview",
                "INVALID_AUTHENTICATION",
            )
        return await call_next(request)

    def props_param(request: Request) -> list[str] | None:
        raw = request.query_params.get("properties")
        return raw.split(",") if raw else None

    @app.get("/crm/v3/objects/{kind}")
    def list_objects(kind: str, request: Request) -> Response:
        if kind not in rows:
            return error(404, f"Unable to infer object type from: {kind}", "OBJECT_NOT_FOUND")
        try:
            limit = int(request.query_params.get("limit", "10"))
        except ValueError:
            return error(400, "Invalid input JSON on line 1", "VALIDATION_ERROR")
        if not 1 <= limit <= 100:
            return error(400, "limit must be between 1 and 100", "VALIDATION_ERROR")
        after = int(request.query_params.get("after", "0"))
        selected = [r for key, r in rows[kind].items() if int(key) >= after]
        page = selected[:limit]
        body: dict[str, Any] = {"results": [_view(r, kind, props_param(request)) for r in page]}
        if len(selected) > limit:
            nxt = selected[limit]["id"]
            link = f"{request.base_url}crm/v3/objects/{kind}?after={nxt}&limit={limit}"
            body["paging"] = {"next": {"after": nxt, "link": link}}
        return JSONResponse(body)

    @app.get("/crm/v3/objects/{kind}/{oid}")
    def get_object(kind: str, oid: str, request: Request) -> Response:
        record = rows.get(kind, {}).get(oid)
        if record is None:
            return error(404, "resource not found", "OBJECT_NOT_FOUND")
        return JSONResponse(_view(record, kind, props_param(request)))

    def check_properties(kind: str, payload: Any) -> JSONResponse | dict[str, Any]:
        if not isinstance(payload, dict) or not isinstance(payload.get("properties"), dict):
            return error(400, "Invalid input JSON: properties is required", "VALIDATION_ERROR")
        unknown = set(payload["properties"]) - WRITABLE[kind]
        if unknown:
            name = sorted(unknown)[0]
            return error(400, f'Property values were not valid: "{name}" does not exist',
                         "VALIDATION_ERROR")  # fmt: skip
        return payload["properties"]

    @app.post("/crm/v3/objects/{kind}")
    async def create_object(kind: str, request: Request) -> Response:
        props = check_properties(kind, await request.json())
        if isinstance(props, JSONResponse):
            return props
        if kind == "contacts" and any(
            r["properties"].get("email") == props.get("email") for r in rows[kind].values()
        ):
            return error(409, "Contact already exists. Existing ID: 100", "CONFLICT")
        counter["next"] += 1
        oid, now = str(counter["next"]), _ts(datetime.now(UTC))
        created = {"createdate": now, "lastmodifieddate": now, "hs_lastmodifieddate": now}
        record: dict[str, Any] = {
            "id": oid, "properties": {**props, **created, "hs_object_id": oid},
            "createdAt": now, "updatedAt": now, "archived": False,
        }  # fmt: skip
        rows[kind][oid] = record
        return JSONResponse(_view(record, kind, list(record["properties"])), status_code=201)

    @app.patch("/crm/v3/objects/{kind}/{oid}")
    async def update_object(kind: str, oid: str, request: Request) -> Response:
        record = rows.get(kind, {}).get(oid)
        if record is None:
            return error(404, "resource not found", "OBJECT_NOT_FOUND")
        props = check_properties(kind, await request.json())
        if isinstance(props, JSONResponse):
            return props
        now = _ts(datetime.now(UTC))
        record["properties"].update(props, lastmodifieddate=now, hs_lastmodifieddate=now)
        record["updatedAt"] = now
        return JSONResponse(_view(record, kind, list(record["properties"])))

    @app.delete("/crm/v3/objects/{kind}/{oid}")
    def archive_object(kind: str, oid: str) -> Response:
        if rows.get(kind, {}).pop(oid, None) is None:
            return error(404, "resource not found", "OBJECT_NOT_FOUND")
        return Response(status_code=204)

    return app, state
