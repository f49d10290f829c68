"""The rq-scheduler the service stores schedules with, as the workers read them."""

from __future__ import annotations

import signal
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


class OnceStoppedScheduler(Scheduler):
    """rq-scheduler whose stop runs once: Ctrl-C reaches the whole process group and the
    service then sends SIGTERM too, and a second stop raising SystemExit inside the exiting
    interpreter's atexit callbacks prints a traceback."""

    def _install_signal_handlers(self) -> None:
        super()._install_signal_handlers()
        stop = signal.getsignal(signal.SIGTERM)

        def stop_once(signum: int, frame: Any) -> None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            stop(signum, frame)  # type: ignore[operator, misc]

        signal.signal(signal.SIGINT, stop_once)
        signal.signal(signal.SIGTERM, stop_once)


def make_scheduler(connection: redis.Redis, interval: int = 5) -> Scheduler:
    return OnceStoppedScheduler(connection=connection, interval=interval, job_class=JsonJob)
