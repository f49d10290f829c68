"""The service on a real Ray cluster, the way docs/deploying.md's cluster section runs it.

A head node (no CPUs for tasks) and a worker node are started with ``ray start``; the model
is deployed with ``serve deploy serving/serve_config.yaml``; an HTTP front started with
``RAY_ADDRESS`` pointing at the head classifies through the replicas on the worker node.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import free_port
from tests.serving.in_process import InProcessClassifier
from tests.serving.ray_cluster import RayCluster, ray_cluster

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

REPO = Path(__file__).resolve().parents[2]
MESSAGES = [
    "where is my parcel, it was due on monday",
    "I want my money back for the broken blender",
    "can I change the delivery address on order 5521?",
]


def _wait_until_running(cluster: RayCluster, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    status: dict = {}
    while time.monotonic() < deadline:
        status = yaml.safe_load(cluster.cli("serve", "status", "-a", cluster.dashboard_url)) or {}
        app = (status.get("applications") or {}).get("switchyard") or {}
        if app.get("status") == "RUNNING":
            return
        if app.get("status") == "DEPLOY_FAILED":
            break
        time.sleep(2)
    raise AssertionError(f"the Serve application did not start: {status}")


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    with ray_cluster() as running:
        running.cli("serve", "deploy", "serving/serve_config.yaml", "-a", running.dashboard_url)
        _wait_until_running(running)
        yield running


@pytest.fixture
def front(cluster: RayCluster, db: None, tmp_path: Path) -> Iterator[str]:
    """``uvicorn switchyard.app:from_environment`` as its own process, joined to the cluster."""
    port = free_port()
    log = tmp_path / "front.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "switchyard.app:from_environment", "--factory",
             "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO,
            env={**os.environ, **cluster.auth_env, "RAY_ADDRESS": cluster.gcs_address},
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
            assert process.poll() is None, log.read_text()[-3000:]
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_replicas_run_on_the_worker_node(cluster: RayCluster) -> None:
    nodes = {node["node_id"]: node for node in cluster.list_json("nodes")}
    assert len([n for n in nodes.values() if n["state"] == "ALIVE"]) == 2
    replicas = [
        actor
        for actor in cluster.list_json("actors")
        if actor["class_name"].startswith("ServeReplica:switchyard:IntentClassifier")
        and actor["state"] == "ALIVE"
    ]
    assert len(replicas) >= 2  # serve_config.yaml: min_replicas 2
    assert all(not nodes[actor["node_id"]]["is_head_node"] for actor in replicas)


def test_front_with_ray_address_classifies_on_the_cluster(
    front: str,
    make_token: Callable[..., str],
    in_process_classifier: InProcessClassifier,
) -> None:
    headers = {"Authorization": f"Bearer {make_token()}"}
    with httpx.Client(base_url=f"{front}/v1", headers=headers, timeout=60) as client:
        single = client.post("/inference/intent-classify", json={"message": MESSAGES[0]})
        batch = client.post(
            "/inference/intent-classify/batch",
            json={"messages": [{"id": str(i), "message": m} for i, m in enumerate(MESSAGES)]},
        )
    assert single.status_code == 200, single.text
    assert batch.status_code == 200, batch.text
    assert single.json()["model_version"] == in_process_classifier.model_version
    assert batch.json()["model_version"] == in_process_classifier.model_version

    # The cluster serves the shipped model: the same answers as running it in this process.
    model = in_process_classifier.model
    probabilities = model.predict_messages([MESSAGES[0], *MESSAGES])
    expected = [(model.info.labels[int(row.argmax())], float(row.max())) for row in probabilities]
    top = single.json()["predictions"][0]
    served = [(single.json()["top_intent"], top["confidence"])]
    served += [(r["top_intent"], r["confidence"]) for r in batch.json()["results"]]
    assert [r["id"] for r in batch.json()["results"]] == ["0", "1", "2"]
    for (intent, confidence), (want_intent, want_confidence) in zip(served, expected, strict=True):
        assert intent == want_intent
        # static int8: a message scores the same whatever its batch neighbours
        assert confidence == pytest.approx(want_confidence, abs=1e-4)
