"""The rq-scheduler the service stores schedules with, as the workers read them."""

from __future__ import annotations

from typing import Any

import redis
from rq.job import Job
from rq.serializers import JSONSerializer
from rq_scheduler import Scheduler


class JsonJob(Job):
    """An RQ job stored as JSON, like every job the workers (JSON serializer) run;
    rq-scheduler creates and fetches jobs without a serializer argument."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["serializer"] = JSONSerializer
        super().__init__(*args, **kwargs)


def make_scheduler(connection: redis.Redis, interval: int = 5) -> Scheduler:
    return Scheduler(connection=connection, interval=interval, job_class=JsonJob)
