"""A model replica killed under load: requests in flight are retried by Serve or answered 503
with Retry-After, none hangs, and Serve starts a replacement."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.platform_api.processes import wait_until

pytestmark = [pytest.mark.db, pytest.mark.slow]

PATH = "/v1/inference/intent-classify"
APP, DEPLOYMENT = "switchyard", "IntentClassifier"


def _running_replicas() -> int:
    from ray import serve

    deployment = serve.status().applications[APP].deployments[DEPLOYMENT]
    return deployment.replica_states.get("RUNNING", 0)


def _kill_one_replica() -> str:
    import ray

    names = [
        a for a in ray.util.list_named_actors(all_namespaces=True)
        if a["name"].startswith(f"SERVE_REPLICA::{APP}#{DEPLOYMENT}")
    ]  # fmt: skip
    victim = names[0]
    ray.kill(ray.get_actor(victim["name"], namespace=victim["namespace"]), no_restart=True)
    return victim["name"]


def test_a_killed_replica_costs_no_hang_and_is_replaced(
    ray_live_server: str, auth_headers: dict[str, str]
) -> None:
    wait_until(lambda: _running_replicas() >= 2, timeout=120)
    replicas = _running_replicas()
    stop = threading.Event()
    outcomes: list[tuple[float, int | str, str | None]] = []

    def load() -> None:
        with httpx.Client(base_url=ray_live_server, headers=auth_headers, timeout=30) as client:
            while not stop.is_set():
                try:
                    response = client.post(PATH, json={"message": "where is my parcel?"})
                    outcomes.append((time.monotonic(), response.status_code,
                                     response.headers.get("retry-after")))  # fmt: skip
                except httpx.HTTPError as exc:  # a timeout here is a hang
                    outcomes.append((time.monotonic(), type(exc).__name__, None))

    workers = [threading.Thread(target=load) for _ in range(4)]
    for worker in workers:
        worker.start()
    try:
        time.sleep(2)
        killed_at = time.monotonic()
        _kill_one_replica()
        time.sleep(8)
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=60)
    assert not any(w.is_alive() for w in workers), "a request hung"

    statuses = {status for _, status, _ in outcomes}
    assert statuses <= {200, 503}, statuses
    assert all(retry for _, status, retry in outcomes if status == 503)
    assert any(status == 200 for at, status, _ in outcomes if at > killed_at + 1), (
        "the remaining replicas keep answering"
    )
    wait_until(lambda: _running_replicas() >= replicas, timeout=180)
