"""Events written into the outbox: the payload as given, in the caller's transaction only."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from sqlmodel import col, select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.services.events import json_text, record_event
from platform_api.tables.common import as_utc
from platform_api.tables.outbox import OutboxEvent

PAYLOAD: dict[str, Any] = {
    "sync_job_run_id": "srun_1",
    "page": 3,
    "records": [{"id": "rma_1", "refund_amount": 38.5, "note": "Grüße, 東京 \u2028", "tags": []},
                {"id": 7, "nested": {"deep": [1, 2.0, None, True, False]}}],
}  # fmt: skip


@pytest.mark.parametrize(
    "value",
    [PAYLOAD, [], {}, "text \"quoted\" \\ \n", 10**20, -0.0, 1e-7, 123456789.123456789],
    ids=["payload", "empty list", "empty object", "escapes", "big int", "minus zero", "small",
         "long float"],
)  # fmt: skip
def test_json_text_is_the_same_json_as_json_dumps(value: Any) -> None:
    assert json.loads(json_text(value)) == json.loads(json.dumps(value))


def test_json_text_keeps_non_finite_numbers_and_lone_surrogates_as_json_dumps_does() -> None:
    written = json.loads(json_text([math.inf, -math.inf, math.nan]))
    assert written[:2] == [math.inf, -math.inf] and math.isnan(written[2])
    assert json.loads(json_text({"bad": "\ud800"})) == {"bad": "\ud800"}


@pytest.mark.db
def test_an_event_is_written_with_its_payload_and_returned(settings: Settings, db: None) -> None:
    with session_scope(settings) as session:
        event = record_event(
            session, environment_id="development", event_type="sync_job_run:record",
            payload=PAYLOAD, settings=settings, webhook_id="wh_1",
        )  # fmt: skip
    with session_scope(settings) as session:
        row = session.get(OutboxEvent, event.id)
    assert row is not None
    assert row.payload == PAYLOAD and row.event_type == "sync_job_run:record"
    assert row.target_webhook_id == "wh_1" and row.dispatched_at is None
    assert row.environment_id == "development"
    assert as_utc(row.created_at) == as_utc(event.created_at)


@pytest.mark.db
def test_an_event_of_a_rolled_back_transaction_is_not_written(settings: Settings, db: None) -> None:
    with pytest.raises(RuntimeError), session_scope(settings) as session:
        record_event(
            session, environment_id="development", event_type="sync_job_run:record",
            payload=PAYLOAD, settings=settings,
        )  # fmt: skip
        raise RuntimeError("the page failed")
    with session_scope(settings) as session:
        written = session.exec(
            select(OutboxEvent).where(col(OutboxEvent.event_type) == "sync_job_run:record")
        ).all()
    assert written == []
