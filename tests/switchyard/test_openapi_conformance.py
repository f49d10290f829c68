"""The service against its own OpenAPI document: schemathesis generates valid and invalid
requests for every operation and sends them over real HTTP to the whole front (platform API
and inference, the model run in-process), with a token of one environment, every integration
installed and a sandbox account connected.

Every response must be documented (status, headers, content type, body schema), no request
may get a 5xx, invalid requests must be refused and valid ones accepted. A rule JSON Schema
cannot state is named below with the operations whose valid-looking requests it refuses;
those keep every other check. A longer run: docs/reliability.md.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.integrations.catalog import get_catalog
from platform_api.services.api_log_writer import flush_api_log
from platform_api.services.tokens import create_token
from sandbox import app as sandbox_app
from switchyard.app import create_app
from tests.conftest import ServerThread, _empty_tables
from tests.platform_api.unified.helpers import make_account
from tests.serving.in_process import InProcessClassifier

pytestmark = [pytest.mark.db, pytest.mark.slow]

# Checks that cannot hold for some operations, each with the rule JSON Schema cannot state
# (or the behaviour) that makes a schema-valid request fail there: (operations, check, why).
# Operations are "METHOD /path", or a regular expression over it when starting with ^.
UNSTATED_RULES = [
    ("POST /v1/sync-job", "positive_data_acceptance",
     "which unified resources and methods an integration offers"),
    ("POST /v1/sync-job-cron-trigger", "positive_data_acceptance",
     "cron field ranges (61 * * * * has the five-field shape)"),
    ("POST /v1/inference/intent-classify/batch", "positive_data_acceptance",
     "message ids unique within a request"),
    ("^(POST /v1/webhook|PATCH /v1/webhook/\\{webhook_id\\})$", "positive_data_acceptance",
     "target hosts the service may reach (no private or loopback hosts)"),
    ("POST /connect-account/session", "positive_data_acceptance",
     "which credential fields each integration asks for"),
    ("^(POST|PATCH) /v1/unified/", "positive_data_acceptance",
     "the provider's own rules for a write (required fields, ids that exist)"),
    ("^(GET|DELETE) /v1/unified/", "use_after_free",
     "skip_api_call=true answers mock data, so a mock delete leaves the record readable"),
]  # fmt: skip
EXAMPLES = int(os.environ.get("SWITCHYARD_CONFORMANCE_EXAMPLES", "12"))


@dataclass
class Service:
    url: str
    headers: dict[str, str]
    account_id: str


@pytest.fixture(scope="module")
def service(_migrated: None, shipped_model_dir: Path) -> Iterator[Service]:
    settings = get_settings()
    with session_scope(settings) as session:
        _, secret = create_token(session, environment="development", name="conformance")
    headers = {"Authorization": f"Bearer {secret}"}
    with ServerThread(sandbox_app.create_app()) as sandbox:
        # A link token the run obtains connects sandbox accounts: their check asks this one.
        app = create_app(
            settings.model_copy(update={"sandbox_url": sandbox.url}),
            classifier=InProcessClassifier(shipped_model_dir),
        )
        with ServerThread(app) as front:
            account = make_account(
                "sandbox", {"api_key": sandbox_app.DEMO_KEY}, base_url=sandbox.url
            )
            for name in get_catalog():  # link tokens may name any of them
                httpx.post(f"{front.url}/v1/environment-integration",
                           json={"integration_name": name}, headers=headers)  # fmt: skip
            yield Service(front.url, headers, account)
    flush_api_log(settings)
    _empty_tables(settings)


def _config(service: Service) -> str:
    """schemathesis.toml: the token, the connected account in every call that names one, an
    empty cursor (a cursor is only valid as the service issued it), and the rules above."""
    lines = [
        "[warnings]",  # shown in the report (e.g. ids no operation supplies), not failures
        "fail-on = false",
        "",
        "[headers]",
        f'Authorization = "{service.headers["Authorization"]}"',
        "",
        "[parameters]",
        f'"query.integrated_account_id" = "{service.account_id}"',
        '"query.next_cursor" = ""',
    ]
    for operations, check, _why in UNSTATED_RULES:
        match = f"include-name-regex = '{operations}'" if operations.startswith("^") else (
            f'include-name = "{operations}"')  # fmt: skip
        lines += ["", "[[operations]]", match, f"checks.{check}.enabled = false"]
    return "\n".join(lines) + "\n"


def test_every_operation_answers_as_documented(service: Service, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(_config(service))
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run",
        f"{service.url}/openapi.json", "--max-examples", str(EXAMPLES),
        "--seed", "20261124", "--no-color", "--workers", "1",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if report := os.environ.get("SWITCHYARD_CONFORMANCE_REPORT"):
        Path(report).write_text(result.stdout)
    summary = result.stdout[-6000:]
    assert result.returncode == 0, summary
    assert "❌" not in summary and re.search(r"(\d+) generated, \1 passed", summary), summary
