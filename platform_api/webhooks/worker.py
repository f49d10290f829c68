"""The RQ worker class for the webhooks queue: jobs run in the worker's own process.

RQ's default worker forks a work horse per job. For a delivery job that fork was most of the
cost: the fork itself, then in every horse a new database connection, a new HTTP connection to
every receiver and a new event loop, thrown away when the job ends (benchmarks/RESULTS.md,
"Webhooks"). A worker that serves only the webhooks queue runs its jobs in its own process
instead (RQ's ``SimpleWorker``), keeping the connection pool, the event loop and the kept-alive
HTTP session (``send_loop``) from job to job.

What the fork protected against is still covered:

- a job that raises (anything, ``SystemExit`` included) is marked failed by RQ and the worker
  takes the next job; the deliveries' state is in the database, not in the job;
- a job that hangs is stopped by RQ's job timeout (SIGALRM in this process), which cancels its
  sends (``SendLoop.run``); each send is bounded by ``webhook_timeout_seconds`` anyway;
- a job that takes the process down (a crash in C code, the OOM killer) takes the worker with
  it: the supervisor of ``switchyard run`` starts it again, and the deliveries it held are
  handed to a new job when their lease runs out, as when a work horse is killed.

A worker that also serves other queues keeps the forking worker: a sync run can hold a worker
for hours and load a lot of memory, which a horse gives back when it ends.

``python -m platform_api.tasks.webhooks`` runs the webhooks worker as ``switchyard worker
--queues webhooks`` does once it picks its class with ``worker_class``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rq import SimpleWorker, Worker

from platform_api.queueing.queues import WEBHOOKS


def worker_class(queues: Sequence[str]) -> type[Worker] | type[SimpleWorker]:
    """RQ's in-process worker for a worker that serves only the webhooks queue; its forking
    worker for any other set of queues."""
    return SimpleWorker if tuple(queues) == (WEBHOOKS,) else Worker
