"""The README's five-minute tour and the tours of docs/unified-api.md and docs/webhooks.md,
run as written against `switchyard run`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.readme_tour import tour_blocks, tour_script
from tests.service_run import kill_group, service_env, sigterm, start_service, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
WEBHOOKS = (ROOT / "docs" / "webhooks.md").read_text()
UNIFIED = (ROOT / "docs" / "unified-api.md").read_text()
SYNC = (ROOT / "docs" / "sync-jobs.md").read_text()
# The README's tour, then the topic pages' (they use its variables).
TOURS = (
    (README, "tour"),
    (UNIFIED, "unified-tour"),
    (SYNC, "sync-tour"),
    (WEBHOOKS, "webhook-tour"),
)


def test_the_tour_has_its_steps_and_leaves_nothing_to_fill_in() -> None:
    script = tour_script(*TOURS)
    assert len(tour_blocks(README)) >= 8
    assert len(tour_blocks(WEBHOOKS, "webhook-tour")) >= 2
    assert len(tour_blocks(UNIFIED, "unified-tour")) >= 3
    assert len(tour_blocks(SYNC, "sync-tour")) >= 1
    requests = (
        "intent-classify/batch", "environment-integration", "link-token",
        "connect-account/session", "unified/wms/orders", "sync-job-run", "unified_cache/returns",
        "webhook/test", "webhook_receiver.py", "proxy/store/products", "unified/crm/contacts",
        "sync-job-cron-trigger",
    )  # fmt: skip
    for request in requests:
        assert request in script
    # Ids come from the answers, never from the reader.
    command_lines = [line for line in script.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in command_lines if "…" in line.split("#")[0]]
    assert "switchyard " not in script.replace(".venv/bin/switchyard ", "")


@pytest.mark.slow
def test_the_tour_runs_as_written_against_the_service(tmp_path: Path) -> None:
    var_dir, port = tmp_path / "var", free_port()
    # As docs/webhooks.md starts it: deliveries to this machine allowed.
    env = {**service_env(var_dir, port), "SWITCHYARD_WEBHOOK_ALLOWED_HOSTS": '["127.0.0.1"]'}
    log = tmp_path / "run.log"
    proc = start_service(env, log)
    # The tours call `.venv/bin/switchyard` and `.venv/bin/python docs/…` in the checkout:
    # the same commands, whatever interpreter runs the tests.
    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    for command, runs in (("switchyard", "-m switchyard.cli "), ("python", "")):
        # A wrapper, not a link: a linked interpreter would look for its venv beside the link.
        wrapper = checkout / ".venv" / "bin" / command
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" {runs}"$@"\n')
        wrapper.chmod(0o755)
    (checkout / "docs").symlink_to(ROOT / "docs")
    try:
        wait_healthy(proc, port, log, path="/readyz")
        tour = subprocess.run(
            ["bash", "-c", tour_script(*TOURS)],
            cwd=checkout,
            env={
                **env,
                "SY": f"http://127.0.0.1:{port}",
                "HOOK_PORT": str(free_port()),
                "PYTHONPATH": str(ROOT),
            },
            capture_output=True,
            text=True,
            timeout=180,
        )
        sigterm(proc)
    finally:
        kill_group(proc)
    said = tour.stdout
    assert tour.returncode == 0, f"{said[-3000:]}\n{tour.stderr[-3000:]}"
    assert '"top_intent":"track_order"' in said
    assert '"id":"a","top_intent":"cancel_order"' in said
    assert "<title>" in said  # the connect page
    assert '"tenant_id":"acme-corp"' in said
    assert ": completed" in said
    assert '"id":"rma_' in said and '"cached_at"' in said
    assert '"order_number":"WEB-1","status":"on_hold"' in said  # the unified write tour
    assert '"cron_expression":"5 * * * *"' in said and '"next_run_at":"' in said
    assert '"first_name":"Ada"' in said and '"phone":"+44 20 7946 0000"' in said
    # The receiver verified each signature and printed each event once.
    received = [line.split() for line in said.splitlines() if " evt_" in line]
    assert {event for event, _ in received} == {
        "webhook:test", "sync_job_run:started", "sync_job_run:record", "sync_job_run:completed"
    }, said  # fmt: skip
    assert len({event_id for _, event_id in received}) == len(received)
    assert os.path.exists(var_dir / "switchyard.db")
