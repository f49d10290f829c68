"""The inference routes over real HTTP: in-process by default, through Ray end to end.

``app`` answers with the shipped model run in the test process (``InProcessClassifier``), so
the routes' contract tests need no Ray. ``ray_app`` is the real path: Ray started once per
session, the Serve application deployed on it, the front's ``ClassifierClient`` calling it.
The model is the shipped one (``models/LATEST``, or ``SWITCHYARD_MODEL_DIR``). A second
version for the switch test is the same files under another version name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from core.settings import Settings, get_settings
from switchyard.app import create_app
from tests.conftest import ServerThread
from tests.serving.in_process import InProcessClassifier

SWITCH_SUFFIX = "-switch"


@pytest.fixture(scope="session")
def models_root(shipped_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models directory with the shipped version (LATEST) and a second version of it."""
    root = tmp_path_factory.mktemp("models")
    version = shipped_model_dir.name
    (root / version).symlink_to(shipped_model_dir, target_is_directory=True)
    other = root / f"{version}{SWITCH_SUFFIX}"
    other.mkdir()
    for path in shipped_model_dir.iterdir():  # a routed version's route folders included
        if path.name != "model_card.json":
            (other / path.name).symlink_to(path, target_is_directory=path.is_dir())
    card = json.loads((shipped_model_dir / "model_card.json").read_text())
    card["model_version"] = other.name
    (other / "model_card.json").write_text(json.dumps(card))
    (root / "LATEST").write_text(version + "\n")
    return root


def deploy_session_app(models_root: Path) -> str:
    """Deploy serving/serve_config.yaml with the test models; returns the served version."""
    from serving.rollout import deploy, serve_config_for

    settings = get_settings().model_copy(update={"models_root": models_root, "model_dir": None})
    return deploy(serve_config_for(settings), timeout_s=240)


@pytest.fixture(scope="session")
def serve_app(models_root: Path, _test_environment: dict[str, str]) -> Iterator[str]:
    """Local Ray with the intent classifier deployed from serving/serve_config.yaml."""
    import ray
    from ray import serve

    started = False
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
        started = True
    version = deploy_session_app(models_root)
    yield version
    serve.shutdown()
    if started:
        ray.shutdown()


@pytest.fixture
def settings(_test_environment: dict[str, str], models_root: Path) -> Settings:
    """Test settings pointing at the session's models directory; no rate limit by default."""
    return get_settings().model_copy(
        update={"models_root": models_root, "model_dir": None, "inference_rate_limit_per_minute": 0}
    )


@pytest.fixture(scope="session")
def in_process_classifier(shipped_model_dir: Path) -> InProcessClassifier:
    return InProcessClassifier(shipped_model_dir)


@pytest.fixture
def model_version(in_process_classifier: InProcessClassifier) -> str:
    """The version the in-process app answers with."""
    return in_process_classifier.model_version


@pytest.fixture
def app(settings: Settings, db: None, in_process_classifier: InProcessClassifier) -> FastAPI:
    """The front with the model run in this process: the routes' contract, no Ray."""
    return create_app(settings, classifier=in_process_classifier)


@pytest.fixture
def ray_app(settings: Settings, db: None, serve_app: str) -> FastAPI:
    """The front as deployed: its ClassifierClient calls the Serve deployment over Ray."""
    return create_app(settings)


@pytest.fixture
def ray_live_server(ray_app: FastAPI) -> Iterator[str]:
    """``ray_app`` over real HTTP on loopback; yields its base URL."""
    with ServerThread(ray_app) as server:
        yield server.url


@pytest.fixture
def serve_with() -> Iterator[Callable[[FastAPI], str]]:
    """Serve another app (other settings) over HTTP for the rest of the test."""
    servers: list[ServerThread] = []

    def _serve(app: FastAPI) -> str:
        server = ServerThread(app).__enter__()
        servers.append(server)
        return server.url

    yield _serve
    for server in servers:
        server.__exit__(None, None, None)


@pytest.fixture
def http(live_server: str, auth_headers: dict[str, str]) -> Iterator[httpx.Client]:
    """An authenticated HTTP client of the live app (base URL ``.../v1``)."""
    with httpx.Client(base_url=f"{live_server}/v1", headers=auth_headers, timeout=60) as client:
        yield client
