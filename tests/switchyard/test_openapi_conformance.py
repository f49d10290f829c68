"""The service against its own OpenAPI document: schemathesis generates valid and invalid
requests for every operation and sends them over real HTTP to the whole front (platform API
and inference, the model run in-process), with a token of one environment, every integration
installed and a sandbox account connected.

Every response must be documented (status, headers, content type, body schema), no request
may get a 5xx, invalid requests must be refused and valid ones accepted. A rule JSON Schema
cannot state is named below with the operations whose valid-looking requests it refuses;
those keep every other check. Then the stateful phase follows the document's links (a create
or list to the operations on its record) from freshly seeded records. Egress reaches only the
sandbox. A longer run: docs/reliability.md.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
    ("POST /v1/sync-job-run", "positive_data_acceptance",
     "the job's integration matching the account's; a webhook_id naming no webhook (400)"),
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
    ("POST /v1/webhook/test", "ensure_resource_availability",
     "none: the check takes an operation without parameters as called with the created id, "
     "but the stateful phase sometimes sends a generated body id instead of the linked one"),
    ("^(GET|PATCH|DELETE) /v1/unified/", "use_after_free",
     "skip_api_call=true answers mock data, so a record deleted for real still reads and "
     "updates as mock data"),
]  # fmt: skip
EXAMPLES = int(os.environ.get("SWITCHYARD_CONFORMANCE_EXAMPLES", "12"))
# The stateful phase: scenarios (each a chain of calls following the document's links) and
# the most calls in one.
SCENARIOS = int(os.environ.get("SWITCHYARD_CONFORMANCE_SCENARIOS", "100"))
STEPS = 8
SEED = 20261124
# A sync job of the connected account's integration, so runs and triggers have one to name.
SYNC_JOB = {"integration_name": "sandbox", "resources": [{"resource": "wms/returns"}]}


@dataclass
class Service:
    url: str
    headers: dict[str, str]
    sandbox_url: str
    account_id: str = ""
    crm_account_id: str = ""

    @property
    def webhook_host(self) -> str:
        return urlsplit(self.sandbox_url).netloc

    def seed(self) -> None:
        """Connected accounts, every integration enabled, and a record of each kind the
        stateful phase's lists lead to (fuzzed creates are mostly refused, and earlier phases
        disable, update and delete what they find): a sync job with a run and a cron trigger
        of the account, and a webhook with a test event (never delivered: no worker runs
        here, and egress reaches only the sandbox)."""

        def post(path: str, body: dict[str, Any], *, ok: tuple[int, ...] = (201,)) -> Any:
            response = httpx.post(f"{self.url}{path}", json=body, headers=self.headers)
            assert response.status_code in ok, response.text
            return response.json()

        key = {"api_key": sandbox_app.DEMO_KEY}
        self.account_id = make_account("sandbox", key, base_url=self.sandbox_url)
        self.crm_account_id = make_account("sandbox_crm", key, base_url=self.sandbox_url)
        for name in get_catalog():  # link tokens may name any of them
            post("/v1/environment-integration", {"integration_name": name}, ok=(201, 409))
        installed = httpx.get(f"{self.url}/v1/environment-integration", headers=self.headers)
        for integration in installed.json()["result"]:
            httpx.patch(f"{self.url}/v1/environment-integration/{integration['id']}",
                        json={"is_enabled": True}, headers=self.headers)  # fmt: skip
        job = post("/v1/sync-job", SYNC_JOB)["id"]
        of_account = {"sync_job_id": job, "integrated_account_id": self.account_id}
        post("/v1/sync-job-run", of_account)
        post("/v1/sync-job-cron-trigger", {**of_account, "cron_expression": "0 3 * * *"})
        webhook = post("/v1/webhook", {"target_url": f"https://{self.webhook_host}/hook"})
        post("/v1/webhook/test", {"id": webhook["id"]}, ok=(202,))


@pytest.fixture(scope="module")
def service(_migrated: None, shipped_model_dir: Path) -> Iterator[Service]:
    settings = get_settings()
    with session_scope(settings) as session:
        _, secret = create_token(session, environment="development", name="conformance")
    headers = {"Authorization": f"Bearer {secret}"}
    with ServerThread(sandbox_app.create_app()) as sandbox:
        # A link token the run obtains connects sandbox accounts: their check asks this one.
        # Nothing else is reached: fuzzed webhook targets (http://0.com) are public hosts.
        sandbox_host = urlsplit(sandbox.url).netloc
        app = create_app(
            settings.model_copy(
                update={"sandbox_url": sandbox.url, "egress_allow_only": [sandbox_host]}
            ),
            classifier=InProcessClassifier(shipped_model_dir),
        )
        with ServerThread(app) as front:
            yield Service(front.url, headers, sandbox.url)
    flush_api_log(settings)
    _empty_tables(settings)


def stateful_bodies(service: Service) -> dict[str, dict[str, str]]:
    """Body fields (TOML values) of creates, by operation: a host egress may reach, the
    sandbox's resources and credentials, a cron schedule within the allowed interval."""
    sandbox = '"sandbox"'
    return {
        "POST /v1/webhook": {"target_url": f'"https://{service.webhook_host}/hook"'},
        "POST /v1/sync-job": {"integration_name": sandbox,
                              "resources": '[{ resource = "wms/returns" }]'},
        "POST /v1/sync-job-cron-trigger": {"cron_expression": '"0 3 * * *"'},
        "POST /v1/link-token": {"integration_name": sandbox},
        "POST /connect-account/session": {
            "integration_name": sandbox, "credentials": f'{{ api_key = "{sandbox_app.DEMO_KEY}" }}'
        },
    }  # fmt: skip


def _operation(match: str, *settings: str) -> list[str]:
    """A [[operations]] table: ``match`` is "METHOD /path" or a regular expression (^…)."""
    selector = f"include-name-regex = '{match}'" if match.startswith("^") else (
        f'include-name = "{match}"')  # fmt: skip
    return ["", "[[operations]]", selector, *settings]


def _config(service: Service, *, stateful: bool = False) -> str:
    """schemathesis.toml: the token, the connected account in every call that names one (the
    CRM account in CRM calls), an empty cursor (a cursor is only valid as the service issued
    it), the stateful phase's size, and the rules above. For the stateful phase, the fields
    whose valid values are the service's own (``stateful_bodies``) too, so its creates succeed
    and their links lead somewhere."""
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
        "",
        "[phases.stateful]",
        f"max-steps = {STEPS}",
        "",
        "[phases.stateful.generation]",
        f"max-examples = {SCENARIOS}",
    ]
    crm = f'"query.integrated_account_id" = "{service.crm_account_id}"'
    lines += _operation("^[A-Z]+ /v1/unified/crm/", f"parameters = {{ {crm} }}")
    # Runs and triggers are of the connected account (the job comes by a link).
    account = f'"body.integrated_account_id" = "{service.account_id}"'
    for operation in ("POST /v1/sync-job-run", "POST /v1/sync-job-cron-trigger"):
        lines += _operation(operation, f"parameters = {{ {account} }}")
    for operation, fields in (stateful_bodies(service) if stateful else {}).items():
        values = ", ".join(f'"body.{name}" = {value}' for name, value in fields.items())
        lines += _operation(operation, f"parameters = {{ {values} }}")
    for operations, check, _why in UNSTATED_RULES:
        lines += _operation(operations, f"checks.{check}.enabled = false")
    return "\n".join(lines) + "\n"


def test_every_operation_answers_as_documented(service: Service, tmp_path: Path) -> None:
    reports: list[str] = []

    def run(phases: str, seed: int) -> str:
        service.seed()
        config = tmp_path / f"schemathesis-{phases.split(',')[0]}.toml"
        config.write_text(_config(service, stateful=phases == "stateful"))
        command = [
            sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run",
            f"{service.url}/openapi.json", "--max-examples", str(EXAMPLES), "--phases", phases,
            "--seed", str(seed), "--no-color", "--workers", "1",
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=900)
        reports.append(result.stdout)
        if report := os.environ.get("SWITCHYARD_CONFORMANCE_REPORT"):
            Path(report).write_text("\n".join(reports))
        summary = result.stdout[-6000:]
        assert result.returncode == 0, summary
        assert "❌" not in summary and re.search(r"(\d+) generated, \1 passed", summary), summary
        return result.stdout

    run("examples,coverage,fuzzing", SEED)
    # The stateful phase runs on its own, from freshly seeded records. Hypothesis ends it
    # early, as passed, when the API's changed state makes a scenario's replay draw
    # differently: it is run again (another seed) until half its scenarios have run.
    scenarios = 0
    for attempt in range(3):
        stateful = re.search(
            r"✅  Stateful \(in .*?\)\s+Scenarios:\s+(\d+)\s+API Links:\s+(\d+) covered / "
            r"\d+ selected / (\d+) total \((\d+) inferred\)",
            output := run("stateful", SEED + attempt),
        )
        assert stateful, output[:3000]
        ran, covered, total, inferred = map(int, stateful.groups())
        assert ran > 0 and covered > 0, stateful.group(0)
        # Every link the document declares was loaded (none refused as invalid).
        assert total - inferred == _declared_links(service), stateful.group(0)
        scenarios += ran
        if scenarios >= SCENARIOS // 2:
            break


def _declared_links(service: Service) -> int:
    document = httpx.get(f"{service.url}/openapi.json").json()
    return sum(len(response.get("links", {}))
               for item in document["paths"].values() for operation in item.values()
               for response in operation.get("responses", {}).values())  # fmt: skip
