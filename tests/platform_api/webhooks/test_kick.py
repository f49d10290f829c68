"""The dispatcher kick: requested with the settings that name its Redis, sent after the commit."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from sqlmodel import Session

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.services.events import record_event
from platform_api.webhooks.kick import KICK_KEY
from tests.platform_api.processes import RedisServer

pytestmark = pytest.mark.db


def _record(session: Session, settings: Settings) -> None:
    record_event(
        session,
        environment_id="development",
        event_type="integrated_account:created",
        payload={"id": "acct_1"},
        settings=settings,
    )


def test_a_commit_kicks_once_and_a_rollback_never(
    settings: Settings, db: None, redis_client: redis.Redis
) -> None:
    with session_scope(settings) as session:
        _record(session, settings)
        _record(session, settings)
        assert redis_client.llen(KICK_KEY) == 0  # not before the commit
    assert redis_client.llen(KICK_KEY) == 1  # two events, one kick
    redis_client.delete(KICK_KEY)
    with pytest.raises(RuntimeError), session_scope(settings) as session:
        _record(session, settings)
        raise RuntimeError("the change failed")
    assert redis_client.llen(KICK_KEY) == 0


def test_the_kick_goes_to_the_redis_of_the_settings_passed(
    settings: Settings, db: None, redis_client: redis.Redis, tmp_path: Path
) -> None:
    other = RedisServer(tmp_path)
    other.start()
    try:
        elsewhere = settings.model_copy(update={"redis_url": other.url})
        # The session is opened with the test settings; the kick is requested with others.
        with session_scope(settings) as session:
            _record(session, elsewhere)
        client = redis.Redis.from_url(other.url)
        assert client.llen(KICK_KEY) == 1
        client.close()
        assert redis_client.llen(KICK_KEY) == 0
    finally:
        other.crash()
