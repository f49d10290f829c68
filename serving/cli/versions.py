"""``switchyard model list | status | use``: the versions, the served one, switching it.

``use`` deploys a version only when ``intent.model_store.promotion_verdict`` lets it replace
the served version (field-set macro-F1 not lower, on the same file), unless ``--force``.
"""

from __future__ import annotations

import typer

from core.settings import Settings, get_settings
from intent import model_store
from serving.cli.common import EXIT_BAD_INPUT, EXIT_REFUSED


def list_versions() -> None:
    """Model versions under the models directory; LATEST is the default one."""
    root = get_settings().models_root
    latest = model_store.latest_version(root)
    versions = model_store.list_versions(root)
    if not versions:
        typer.echo(f"no model versions under {root}")
        raise typer.Exit(1)
    for model_dir in versions:
        card = model_store.read_card(model_dir) if model_store.has_card(model_dir) else {}
        test = card.get("metrics", {}).get("test", {})
        accuracy = test.get("int8", {}).get("accuracy", test.get("accuracy"))
        marker = " (LATEST)" if model_dir.name == latest else ""
        detail = f"  test accuracy={accuracy:.3f}" if accuracy is not None else ""
        typer.echo(f"{model_dir.name}{marker}  base={card.get('base_model', '?')}{detail}")


def status() -> None:
    """The version the running service serves."""
    from serving.ray_connect import connect_ray
    from serving.rollout import wait_until_serving

    settings = get_settings()
    connect_ray(settings.ray_address)
    typer.echo(wait_until_serving(None, app_name=settings.serve_app_name, timeout_s=30))


def use(
    version: str = typer.Argument(help="Version directory under the models directory."),
    timeout: float = typer.Option(180.0, help="Seconds to wait for every replica to switch."),
    force: bool = typer.Option(
        False, "--force", help="Deploy even when the field-set promotion gate refuses."
    ),
) -> None:
    """Serve VERSION: replicas load it, then switch, without dropping requests.

    Refused (exit 3) unless VERSION's field-set macro-F1 is at least the served version's,
    both scored on the same file (``switchyard model score``); ``--force`` skips the check.
    """
    settings = get_settings()
    model_dir = settings.models_root / version
    if not model_store.has_card(model_dir):
        typer.echo(f"no model {version!r} under {settings.models_root}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    from intent.routed import open_model
    from serving.ray_connect import connect_ray
    from serving.rollout import deploy, serve_config_for

    try:
        # Load it here first: a broken model directory fails now, not inside the replicas.
        open_model(model_dir)
    except Exception as exc:
        typer.echo(f"model {version!r} does not load: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc

    connect_ray(settings.ray_address)
    if force:
        typer.echo("--force: promotion gate skipped")
    else:
        _pass_the_gate(settings, version)

    # The running config with only user_config.model_version changed: an in-place reconfigure.
    settings = settings.model_copy(update={"model_dir": None})
    served = deploy(serve_config_for(settings, model_version=version), timeout_s=timeout)
    typer.echo(f"serving {served}")


def _pass_the_gate(settings: Settings, version: str) -> None:
    """Print why VERSION may replace the served version, or refuse it (exit 3)."""
    from serving.rollout import wait_until_serving

    try:
        served = wait_until_serving(None, app_name=settings.serve_app_name, timeout_s=30)
    except (TimeoutError, RuntimeError) as exc:
        typer.echo(
            f"cannot tell which version is served ({exc}); "
            "pass --force to deploy without the promotion gate",
            err=True,
        )
        raise typer.Exit(EXIT_REFUSED) from exc
    root = settings.models_root
    served_card = model_store.card_of_version(root, served) or {"model_version": served}
    allowed, reason = model_store.promotion_verdict(
        model_store.read_card(root / version), served_card
    )
    if not allowed:
        typer.echo(reason, err=True)
        raise typer.Exit(EXIT_REFUSED)
    typer.echo(reason)
