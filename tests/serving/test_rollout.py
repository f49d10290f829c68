"""`python -m serving.rollout`, as `switchyard run` calls it: deploys, or fails loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serving.conftest import deploy_session_app

pytestmark = [pytest.mark.slow]


def _launch(app_name: str, models_root: Path) -> subprocess.CompletedProcess[str]:
    import ray

    env = {
        **os.environ,
        "RAY_ADDRESS": ray.get_runtime_context().gcs_address,
        "SWITCHYARD_SERVE_APP_NAME": app_name,
        "SWITCHYARD_MODELS_ROOT": str(models_root),
    }
    env.pop("SWITCHYARD_MODEL_DIR", None)
    # As a child of `switchyard run` sees it: ray.init set RAY_AUTH_MODE in the parent only
    # after the child's environment was taken; the launcher must still get in.
    env.pop("RAY_AUTH_MODE", None)
    return subprocess.run(
        [sys.executable, "-m", "serving.rollout"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def restore_session_app(serve_app: str, models_root: Path) -> Iterator[None]:
    # A config deploy replaces every config-deployed application, the session's included.
    yield
    assert deploy_session_app(models_root) == serve_app


@pytest.mark.usefixtures("restore_session_app")
def test_launch_deploys_and_exits_zero(serve_app: str, models_root: Path) -> None:
    from ray import serve

    result = _launch("launch-test", models_root)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"serving model {serve_app}" in result.stderr
    assert serve.status().applications["launch-test"].status == "RUNNING"


@pytest.mark.usefixtures("restore_session_app")
def test_launch_without_a_model_exits_non_zero(tmp_path: Path) -> None:
    result = _launch("launch-broken", tmp_path)
    assert result.returncode != 0
    assert "model deployment failed: " in result.stderr  # serving.rollout._report_failure
