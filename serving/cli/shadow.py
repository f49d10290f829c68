"""``switchyard model shadow``: a candidate model sees a sample of live traffic, compared.

``shadow VERSION`` deploys VERSION as a second Serve application beside the served one
(``serving.rollout.deploy_shadow``), waits until it answers, then writes the Redis record the
fronts follow (``serving/shadow.py``); ``--report`` reads the counts every front adds to Redis;
``--stop`` deletes the record, then the application.
"""

from __future__ import annotations

from typing import Any

import typer

from core.settings import Settings, get_settings
from intent import model_store


def _redis(settings: Settings) -> Any:
    import redis

    from core.redis_url import get_redis_url

    timeout = max(settings.redis_timeout_s, 5.0)  # a command line can wait for Redis
    return redis.Redis.from_url(
        get_redis_url(settings), socket_connect_timeout=timeout, socket_timeout=timeout
    )


def shadow(
    version: str | None = typer.Argument(
        None,
        metavar="VERSION",
        help="Version directory under the models directory to run as the shadow.",
    ),
    report: bool = typer.Option(
        False, "--report", help="Print the agreement rate and the disagreement pairs."
    ),
    stop: bool = typer.Option(
        False, "--stop", help="Remove the shadow; fronts stop copying (prints the last report)."
    ),
    sample_rate: float | None = typer.Option(
        None,
        min=0.0,
        max=1.0,
        help="Share of messages to copy; default: each front's SWITCHYARD_INFERENCE_SHADOW_"
        "SAMPLE_RATE.",
    ),
    timeout: float = typer.Option(180.0, help="Seconds to wait for the shadow to answer."),
) -> None:
    """Shadow traffic: copy a sample of live traffic to VERSION and compare its top intents.

    Clients are always answered by the served model; the shadow's answers are only counted.
    """
    if sum((version is not None, report, stop)) != 1:
        typer.echo("give exactly one of VERSION, --report or --stop", err=True)
        raise typer.Exit(2)
    settings = get_settings()
    if report:
        _report(settings)
    elif stop:
        _stop(settings)
    else:
        assert version is not None
        _start(settings, version, sample_rate, timeout)


def _start(settings: Settings, version: str, sample_rate: float | None, timeout: float) -> None:
    from serving import shadow as records

    if not model_store.has_card(settings.models_root / version):
        typer.echo(f"no model {version!r} under {settings.models_root}", err=True)
        raise typer.Exit(2)
    from intent.routed import open_model
    from serving.ray_connect import connect_ray
    from serving.rollout import deploy_shadow, shadow_app_name

    try:
        # Load it here first: a broken model directory fails now, not inside a replica.
        open_model(settings.models_root / version)
    except Exception as exc:
        typer.echo(f"model {version!r} does not load: {exc}", err=True)
        raise typer.Exit(2) from exc

    connect_ray(settings.ray_address)
    settings = settings.model_copy(update={"model_dir": None})
    try:
        deploy_shadow(settings, version, timeout_s=timeout)
    except (RuntimeError, TimeoutError) as exc:
        typer.echo(f"shadow {version!r} not started: {exc}", err=True)
        raise typer.Exit(1) from exc
    # Written only once the shadow answers, so no front copies to an application still loading.
    record = records.ShadowRecord(
        app=shadow_app_name(settings.serve_app_name), version=version, sample_rate=sample_rate
    )
    records.write_record(_redis(settings), record)
    rate = "the fronts' default" if sample_rate is None else f"{sample_rate:g}"
    typer.echo(f"shadowing {version} (application {record.app}, sample rate {rate})")


def _report(settings: Settings) -> None:
    from serving import shadow as records

    client = _redis(settings)
    record = records.read_record(client)
    if record is None:
        typer.echo("no shadow traffic running (start it: switchyard model shadow VERSION)")
        raise typer.Exit(1)
    typer.echo(records.read_counts(client, record).report(record))


def _stop(settings: Settings) -> None:
    from serving import shadow as records
    from serving.ray_connect import connect_ray
    from serving.rollout import remove_shadow

    client = _redis(settings)
    record = records.read_record(client)
    # The record first: fronts stop copying before the application goes away.
    records.delete_record(client)
    connect_ray(settings.ray_address)
    removed = remove_shadow(settings)
    if record is not None:
        typer.echo(records.read_counts(client, record).report(record))
    typer.echo("shadow stopped" if record is not None or removed else "no shadow was running")
