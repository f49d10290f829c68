"""Every string a request body can carry fits the column it is stored in.

A value longer than its column is an error on PostgreSQL (a 500), so each API limit must be
at most the column's length; found by walking the request models beside each table."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel
from sqlmodel import SQLModel

import platform_api.tables as tables_package
from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.services.tokens import create_token
from tests.assertions import assert_error


def _string_limit(field: Any) -> int | None:
    for item in field.metadata:
        if getattr(item, "max_length", None) is not None:
            return item.max_length
    return None


def _request_fields() -> list[tuple[str, str, int, int | None]]:
    """(model, field, column length, API limit) for every string field of a request model
    whose name is a bounded string column of a table in the same module."""
    found = []
    for info in pkgutil.iter_modules(tables_package.__path__):
        module = importlib.import_module(f"{tables_package.__name__}.{info.name}")
        columns: dict[str, int] = {}
        for obj in vars(module).values():
            table = getattr(obj, "__table__", None)
            if isinstance(obj, type) and issubclass(obj, SQLModel) and table is not None:
                for column in table.columns:
                    length = getattr(column.type, "length", None)  # String, AutoString
                    if isinstance(length, int):
                        columns[column.name] = length
        for obj in vars(module).values():
            if not (isinstance(obj, type) and issubclass(obj, BaseModel)):
                continue
            if not obj.__name__.endswith(("Create", "Update")) or hasattr(obj, "__table__"):
                continue
            for name, field in obj.model_fields.items():
                if name in columns and "str" in str(field.annotation):
                    found.append((obj.__name__, name, columns[name], _string_limit(field)))
    return found


def test_the_walk_finds_the_request_models() -> None:
    names = {(model, field) for model, field, _, _ in _request_fields()}
    assert ("WebhookCreate", "target_url") in names
    assert ("LinkTokenCreate", "tenant_id") in names


@pytest.mark.parametrize(
    ("model", "field", "column", "limit"), _request_fields(), ids=lambda v: str(v)
)
def test_every_api_limit_fits_its_column(model: str, field: str, column: int, limit: int) -> None:
    assert limit is not None, f"{model}.{field} has no max_length (column: {column})"
    assert limit <= column, f"{model}.{field}: API allows {limit}, column holds {column}"


@pytest.mark.db
def test_a_webhook_url_longer_than_its_column_is_400(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    url = "https://hooks.example.com/" + "a" * (2049 - len("https://hooks.example.com/"))
    assert len(url) == 2049
    response = client.post("/v1/webhook", json={"target_url": url}, headers=auth_headers)
    assert_error(response, 400, "INVALID_REQUEST")


@pytest.mark.db
def test_a_token_name_longer_than_its_column_is_refused() -> None:
    from core.errors import ApiError

    with pytest.raises(ApiError) as excinfo, session_scope(get_settings()) as session:
        create_token(session, environment="development", name="n" * 201)
    assert excinfo.value.status_code == 400
