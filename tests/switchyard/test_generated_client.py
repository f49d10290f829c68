"""A Python client generated from the service's own document works: openapi-python-client
builds it without a warning, and its calls go through to the service over loopback HTTP (the
model run in-process, the sandbox as the connected provider).

The generator lives in an environment of its own: every release caps typer below the version
the service pins. Its location: ``$OPENAPI_PYTHON_CLIENT``, else
``.venv/tools/openapi-python-client``, else the PATH (docs/api-clients.md).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from core.settings import Settings
from sandbox import app as sandbox_app
from switchyard.app import create_app
from tests.conftest import ServerThread
from tests.serving.in_process import InProcessClassifier

pytestmark = [pytest.mark.db, pytest.mark.slow]

GENERATOR_VERSION = "0.29.1"
PACKAGE = "switchyard_api_client"
TOOL_ENV = Path(sys.prefix) / "tools" / "openapi-python-client"
INSTALL = (
    f"python3 -m venv {TOOL_ENV} && "
    f"{TOOL_ENV}/bin/pip install openapi-python-client=={GENERATOR_VERSION}"
)


def _generator() -> Path:
    found = (
        os.environ.get("OPENAPI_PYTHON_CLIENT")
        or (str(TOOL_ENV / "bin" / "openapi-python-client") if TOOL_ENV.exists() else None)
        or shutil.which("openapi-python-client")
    )
    if found is None:
        pytest.fail(f"openapi-python-client is not installed; install it with: {INSTALL}")
    return Path(found)


@pytest.fixture
def front(settings: Settings, db: None, shipped_model_dir: Path) -> Iterator[str]:
    """The front over loopback HTTP, the sandbox as the provider accounts connect to."""
    with ServerThread(sandbox_app.create_app()) as sandbox:
        app = create_app(
            settings.model_copy(update={"sandbox_url": sandbox.url}),
            classifier=InProcessClassifier(shipped_model_dir),
        )
        with ServerThread(app) as server:
            yield server.url


@pytest.fixture
def generated(front: str, tmp_path: Path) -> Iterator[ModuleType]:
    """The client package generated from the served document, importable."""
    document = httpx.get(f"{front}/openapi.json").json()
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(document))
    generator = _generator()
    version = subprocess.run([generator, "--version"], capture_output=True, text=True)
    assert version.stdout.split()[-1] == GENERATOR_VERSION, version.stdout
    # The generator formats its output with ruff, found on the PATH next to it.
    env = {**os.environ, "PATH": f"{generator.parent}{os.pathsep}{os.environ['PATH']}"}
    command: list[str | Path] = [generator, "generate", "--path", path, "--meta", "none",
               "--output-path", tmp_path / PACKAGE, "--fail-on-warning"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Warning" not in output and "Error" not in output, output
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def _example(name: str, document: dict[str, Any]) -> dict[str, Any]:
    example: dict[str, Any] = document["components"]["schemas"][name]["examples"][0]
    return example


def test_a_generated_client_calls_the_service(
    generated: ModuleType, front: str, make_token: Callable[..., str]
) -> None:
    def op(tag: str, name: str) -> Any:
        return importlib.import_module(f"{PACKAGE}.api.{tag}.{name}")

    models = importlib.import_module(f"{PACKAGE}.models")
    document = httpx.get(f"{front}/openapi.json").json()
    anonymous = generated.Client(base_url=front)
    client = generated.AuthenticatedClient(base_url=front, token=make_token("development"))
    classify = op("inference", "classify_intent")

    refused = classify.sync_detailed(
        client=anonymous, body=models.IntentClassifyRequest(message="hello")
    )
    assert refused.status_code == 401
    assert refused.parsed.error == "UNAUTHORIZED"

    # Bodies are the document's own examples: what Swagger UI's "Try it out" sends.
    body = models.IntentClassifyRequest.from_dict(_example("IntentClassifyRequest", document))
    answer = classify.sync(client=client, body=body)
    assert isinstance(answer, models.IntentClassifyResponse), answer
    assert answer.message == "where is my parcel? order #A1234 still not here"
    assert 1 <= len(answer.predictions) <= 3
    assert answer.top_intent == answer.predictions[0].intent

    body = models.BatchClassifyRequest.from_dict(_example("BatchClassifyRequest", document))
    batch = op("inference", "classify_intents_batch").sync(client=client, body=body)
    assert isinstance(batch, models.BatchClassifyResponse), batch
    assert [r.id for r in batch.results] == [m.id for m in body.messages]

    catalog = op("installed_integrations", "list_integrations").sync(client=client)
    assert isinstance(catalog, models.CatalogPage), catalog
    assert "sandbox" in {entry.name for entry in catalog.result}

    body = models.InstalledIntegrationCreate.from_dict({"integration_name": "sandbox"})
    installed = op("installed_integrations", "install_integration").sync(client=client, body=body)
    assert isinstance(installed, models.InstalledIntegrationPublic), installed
    again = op("installed_integrations", "get_installed_integration").sync(
        installed.id, client=client
    )
    assert again.integration.name == "sandbox" and again.is_enabled

    body = models.LinkTokenCreate.from_dict(_example("LinkTokenCreate", document))
    link = op("link_tokens", "create_link_token").sync(client=client, body=body)
    assert isinstance(link, models.LinkTokenPublic), link
    assert link.link_token.startswith("lt_")

    # The connect page's calls: the link token authorizes them, no API token.
    session = op("connect_account", "get_connect_session").sync(
        client=anonymous, link_token=link.link_token
    )
    assert [offer.name for offer in session.integrations] == ["sandbox"]
    credentials = {"api_key": sandbox_app.DEMO_KEY}
    body = models.ConnectSessionCreate.from_dict(
        {"link_token": link.link_token, "integration_name": "sandbox", "credentials": credentials}
    )
    connected = op("connect_account", "connect_account").sync(client=anonymous, body=body)
    assert isinstance(connected, models.ConnectResult), connected

    accounts = op("integrated_accounts", "list_integrated_accounts").sync(client=client)
    assert isinstance(accounts, models.IntegratedAccountPage), accounts
    assert [(a.id, a.tenant_id) for a in accounts.result] == [
        (connected.integrated_account_id, "customer-8412")
    ]

    body = models.OrderInput.from_dict(_example("OrderInput", document))
    order = op("unified_wms", "create_wms_order").sync(
        client=client, body=body, integrated_account_id=connected.integrated_account_id
    )
    assert isinstance(order, models.Order), order
    assert order.customer_email == "ada@example.com"
    fetched = op("unified_wms", "get_wms_order").sync(
        order.id, client=client, integrated_account_id=connected.integrated_account_id
    )
    assert isinstance(fetched, models.Order) and fetched.id == order.id
