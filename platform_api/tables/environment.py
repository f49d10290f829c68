"""Environments: every record belongs to exactly one of them."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from platform_api.tables.common import timestamp_field

ENVIRONMENTS = ("development", "staging", "production")


class Environment(SQLModel, table=True):
    __tablename__ = "environment"

    id: str = Field(primary_key=True, max_length=32)  # the name: development|staging|production
    label: str = Field(max_length=64)
    created_at: datetime = timestamp_field()
