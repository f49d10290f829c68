"""``switchyard model ...``: list the model versions and switch the one being served."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from core.settings import get_settings

app = typer.Typer(help="Model versions: list them, show and switch the served one.")


def _versions(models_root: Path) -> list[Path]:
    return sorted(p.parent for p in models_root.glob("*/model_card.json"))


def _latest(models_root: Path) -> str | None:
    latest = models_root / "LATEST"
    return latest.read_text().strip() if latest.is_file() else None


@app.command("list")
def list_versions() -> None:
    """Model versions under the models directory; LATEST is the default one."""
    root = get_settings().models_root
    latest = _latest(root)
    versions = _versions(root)
    if not versions:
        typer.echo(f"no model versions under {root}")
        raise typer.Exit(1)
    for model_dir in versions:
        card_path = model_dir / "model_card.json"
        card = json.loads(card_path.read_text()) if card_path.is_file() else {}
        test = card.get("metrics", {}).get("test", {})
        accuracy = test.get("int8", {}).get("accuracy", test.get("accuracy"))
        marker = " (LATEST)" if model_dir.name == latest else ""
        detail = f"  test accuracy={accuracy:.3f}" if accuracy is not None else ""
        typer.echo(f"{model_dir.name}{marker}  base={card.get('base_model', '?')}{detail}")


@app.command("status")
def status() -> None:
    """The version the running service serves."""
    from serving.ray_connect import connect_ray
    from serving.rollout import wait_until_serving

    settings = get_settings()
    connect_ray(settings.ray_address)
    typer.echo(wait_until_serving(None, app_name=settings.serve_app_name, timeout_s=30))


@app.command("use")
def use(
    version: str = typer.Argument(help="Version directory under the models directory."),
    timeout: float = typer.Option(180.0, help="Seconds to wait for every replica to switch."),
) -> None:
    """Serve VERSION: replicas load it, then switch, without dropping requests."""
    settings = get_settings()
    if not (settings.models_root / version / "model_card.json").is_file():
        typer.echo(f"no model {version!r} under {settings.models_root}", err=True)
        raise typer.Exit(2)
    from intent.runner import IntentModel
    from serving.ray_connect import connect_ray
    from serving.rollout import deploy, serve_config_for

    try:
        # Load it here first: a broken model directory fails now, not inside the replicas.
        IntentModel(settings.models_root / version)
    except Exception as exc:
        typer.echo(f"model {version!r} does not load: {exc}", err=True)
        raise typer.Exit(2) from exc

    connect_ray(settings.ray_address)
    # The running config with only user_config.model_version changed: an in-place reconfigure.
    settings = settings.model_copy(update={"model_dir": None})
    served = deploy(serve_config_for(settings, model_version=version), timeout_s=timeout)
    typer.echo(f"serving {served}")
