"""``switchyard model ...``: list, compare and score model versions; switch the served one.

``compare`` and ``score`` run the models in this process through ``intent.runner`` (as the
replicas do, in the evaluation's chunks); ``use`` deploys a version only when its field-set
macro-F1 is not below the served version's (``promotion_decision``), unless ``--force``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from core.settings import get_settings
from intent.evaluation import (
    FIELD_SET_NAME,
    FIELD_SET_PATH,
    DataFileError,
    data_reference,
    field_set_entry,
    field_set_of,
    label_ids,
    read_rows,
    set_field_set,
    sha256_file,
    summarize,
)

if TYPE_CHECKING:
    from intent.runner import IntentModel

app = typer.Typer(
    help="Model versions: list, compare and score them; show and switch the served one."
)

# Exit codes: 2 for a missing version or unreadable input, 3 when the promotion gate refuses.
EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3
MESSAGE_WIDTH = 80
# Order of the changed rows: what got worse first.
CHANGE_ORDER = ("broken", "still_wrong", "fixed")


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
    force: bool = typer.Option(
        False, "--force", help="Deploy even when the field-set promotion gate refuses."
    ),
) -> None:
    """Serve VERSION: replicas load it, then switch, without dropping requests.

    Refused (exit 3) unless VERSION's field-set macro-F1 is at least the served version's,
    both scored on the same file (``switchyard model score``); ``--force`` skips the check.
    """
    settings = get_settings()
    card_path = settings.models_root / version / "model_card.json"
    if not card_path.is_file():
        typer.echo(f"no model {version!r} under {settings.models_root}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    from intent.runner import IntentModel
    from serving.ray_connect import connect_ray
    from serving.rollout import deploy, serve_config_for, wait_until_serving

    try:
        # Load it here first: a broken model directory fails now, not inside the replicas.
        IntentModel(settings.models_root / version)
    except Exception as exc:
        typer.echo(f"model {version!r} does not load: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc

    connect_ray(settings.ray_address)
    if force:
        typer.echo("--force: promotion gate skipped")
    else:
        try:
            served = wait_until_serving(None, app_name=settings.serve_app_name, timeout_s=30)
        except (TimeoutError, RuntimeError) as exc:
            typer.echo(
                f"cannot tell which version is served ({exc}); "
                "pass --force to deploy without the promotion gate",
                err=True,
            )
            raise typer.Exit(EXIT_REFUSED) from exc
        served_card = _card_of_version(settings.models_root, served) or {"model_version": served}
        allowed, reason = promotion_decision(json.loads(card_path.read_text()), served_card)
        if not allowed:
            typer.echo(reason, err=True)
            raise typer.Exit(EXIT_REFUSED)
        typer.echo(reason)

    # The running config with only user_config.model_version changed: an in-place reconfigure.
    settings = settings.model_copy(update={"model_dir": None})
    served = deploy(serve_config_for(settings, model_version=version), timeout_s=timeout)
    typer.echo(f"serving {served}")


def promotion_decision(
    candidate_card: Mapping[str, Any], served_card: Mapping[str, Any]
) -> tuple[bool, str]:
    """May the candidate replace the served version? ``(allowed, reason)``.

    Allowed when the candidate's ``metrics.field_sets.field`` macro-F1 is at least the served
    version's and both were scored on the same file (same SHA-256); refused when it is lower,
    when either card has no such entry or when the files differ.
    """
    candidate = str(candidate_card.get("model_version", "the candidate"))
    served = str(served_card.get("model_version", "the served version"))
    if candidate == served:
        return True, f"{candidate} is the served version"
    ours, theirs = _field_score(candidate_card), _field_score(served_card)
    force = "or pass --force to deploy anyway"
    default_data = data_reference(FIELD_SET_PATH)
    if ours is None or theirs is None:
        missing = [name for name, entry in ((candidate, ours), (served, theirs)) if entry is None]
        data = (ours or theirs or {}).get("data", default_data)
        commands = "; ".join(f"`switchyard model score {name} --data {data}`" for name in missing)
        return False, (
            f"refused: no field-set score (metrics.field_sets.{FIELD_SET_NAME}) in the model "
            f"card of {' and '.join(missing)}: run {commands}, {force}"
        )
    if ours["sha256"] != theirs["sha256"]:
        return False, (
            f"refused: {candidate} was scored on {ours['data']} (sha256 {ours['sha256'][:12]}) "
            f"and {served} on {theirs['data']} (sha256 {theirs['sha256'][:12]}): run "
            f"`switchyard model score {candidate} --data {theirs['data']}` to score both on "
            f"the same file, {force}"
        )
    if ours["macro_f1"] < theirs["macro_f1"]:
        return False, (
            f"refused: {candidate} field-set macro-F1 {ours['macro_f1']:.4f} is lower than "
            f"the served {served}'s {theirs['macro_f1']:.4f} (on {theirs['data']}); pass "
            "--force to deploy anyway"
        )
    return True, (
        f"promotion gate passed: {candidate} field-set macro-F1 {ours['macro_f1']:.4f}, "
        f"served {served} {theirs['macro_f1']:.4f} (on {theirs['data']})"
    )


def _field_score(card: Mapping[str, Any]) -> dict[str, Any] | None:
    """The card's field-set entry when it holds what the gate compares, else None."""
    entry = field_set_of(card)
    if entry is None or not isinstance(entry.get("sha256"), str):
        return None
    if not isinstance(entry.get("macro_f1"), int | float):
        return None
    return entry


def _card_of_version(models_root: Path, model_version: str) -> dict[str, Any] | None:
    """The model card of a served ``model_version``: its directory's, else the card naming it."""
    direct = models_root / model_version / "model_card.json"
    paths = [direct] if direct.is_file() else sorted(models_root.glob("*/model_card.json"))
    for path in paths:
        card = json.loads(path.read_text())
        if path == direct or card.get("model_version") == model_version:
            return card
    return None


# --- compare and score -------------------------------------------------------------------


@dataclass
class _Scored:
    """One model's predictions on the data file."""

    version: str
    model_version: str
    labels: tuple[str, ...]
    probs: np.ndarray

    @property
    def predicted(self) -> list[str]:
        return [self.labels[i] for i in self.probs.argmax(axis=1)]

    def summary(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return summarize(self.probs, label_ids(rows, self.labels), self.labels)


def _fail(message: str) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(EXIT_BAD_INPUT)


def _model_dir(name: str) -> Path:
    """A version under the models directory, or a path to a model directory."""
    root = get_settings().models_root
    for candidate in (root / name, Path(name)):
        if (candidate / "model_card.json").is_file():
            return candidate
    raise _fail(f"no model {name!r} under {root} (nor a model directory at that path)")


def _read_data(path: Path) -> list[dict[str, Any]]:
    try:
        rows = read_rows(path)
    except (OSError, DataFileError) as exc:
        raise _fail(f"cannot read data file {path}: {exc}") from exc
    if not rows:
        raise _fail(f"data file {path} holds no rows")
    return rows


def _load(model_dir: Path) -> IntentModel:
    from intent.runner import IntentModel

    try:
        # All cores, as training.evaluate runs it: the card's numbers and these agree.
        return IntentModel(model_dir, intra_op_threads=0)
    except Exception as exc:
        raise _fail(f"model {str(model_dir)!r} does not load: {exc}") from exc


@contextmanager
def _progress() -> Iterator[Progress]:
    """A progress bar on stderr, so stdout stays the result (``--json`` included)."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        yield progress


def _score(model_dir: Path, rows: list[dict[str, Any]], progress: Progress) -> _Scored:
    """Run one model over every row, in the chunks ``IntentModel.predict_rows`` uses."""
    from intent.runner import EVALUATION_CHUNK

    task = progress.add_task(f"loading {model_dir.name}", total=len(rows))
    model = _load(model_dir)
    unknown = sorted({r["label"] for r in rows} - set(model.info.labels))
    if unknown:
        raise _fail(f"labels {unknown} of the data file are not labels of {model_dir.name}")
    progress.update(task, description=f"scoring {model_dir.name}")
    chunks = []
    for start in range(0, len(rows), EVALUATION_CHUNK):
        chunk = rows[start : start + EVALUATION_CHUNK]
        chunks.append(model.predict_rows(chunk))
        progress.advance(task, len(chunk))
    return _Scored(
        version=model_dir.name,
        model_version=model.info.model_version,
        labels=model.info.labels,
        probs=np.concatenate(chunks),
    )


def _change(label: str, before: str, after: str) -> str:
    if after == label:
        return "fixed"
    return "broken" if before == label else "still_wrong"


def compare_predictions(
    rows: Sequence[Mapping[str, Any]], current: _Scored, candidate: _Scored
) -> dict[str, Any]:
    """Both models' metrics, their difference and every row whose top prediction changed."""
    ours, theirs = candidate.summary(rows), current.summary(rows)
    del ours["rows"], theirs["rows"]  # said once, at the top
    changed = [
        {
            "row": i,
            "message": row["message"],
            "history_turns": len(row.get("conversation_history") or []),
            "label": row["label"],
            "current": before,
            "candidate": after,
            "change": _change(row["label"], before, after),
        }
        for i, (row, before, after) in enumerate(
            zip(rows, current.predicted, candidate.predicted, strict=True)
        )
        if before != after
    ]
    changed.sort(key=lambda c: (CHANGE_ORDER.index(c["change"]), c["row"]))
    return {
        "rows": len(rows),
        "current": {"version": current.version, "model_version": current.model_version} | theirs,
        "candidate": {"version": candidate.version, "model_version": candidate.model_version}
        | ours,
        "difference": {key: ours[key] - theirs[key] for key in ("accuracy", "macro_f1", "ece")}
        | {
            "per_label_f1": {
                label: ours["per_label_f1"][label] - theirs["per_label_f1"][label]
                for label in theirs["per_label_f1"]
            }
        },
        "changed": changed,
        "counts": {
            "changed": len(changed),
            **{kind: sum(c["change"] == kind for c in changed) for kind in CHANGE_ORDER},
        },
    }


def _short(message: str, width: int = MESSAGE_WIDTH) -> str:
    text = " ".join(message.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _delta(value: float, *, lower_is_better: bool = False) -> Text:
    better = value < 0 if lower_is_better else value > 0
    style = "" if abs(value) < 5e-5 else ("green" if better else "red")
    return Text(f"{value:+.4f}", style=style)


def _print_comparison(result: dict[str, Any], console: Console) -> None:
    current, candidate, diff = result["current"], result["candidate"], result["difference"]
    metrics = Table(title=f"{result['data']} ({result['rows']} rows)", title_justify="left")
    metrics.add_column("metric")
    metrics.add_column(f"current\n{current['version']}", justify="right")
    metrics.add_column(f"candidate\n{candidate['version']}", justify="right")
    metrics.add_column("Δ", justify="right")
    for key, title in (("accuracy", "accuracy"), ("macro_f1", "macro-F1"), ("ece", "ECE")):
        metrics.add_row(
            title,
            f"{current[key]:.4f}",
            f"{candidate[key]:.4f}",
            _delta(diff[key], lower_is_better=key == "ece"),
        )
    metrics.add_section()
    for label, delta in diff["per_label_f1"].items():
        metrics.add_row(
            f"F1 {label}",
            f"{current['per_label_f1'][label]:.4f}",
            f"{candidate['per_label_f1'][label]:.4f}",
            _delta(delta),
        )
    console.print(metrics)

    counts = result["counts"]
    if not result["changed"]:
        console.print("no top prediction changed")
        return
    changes = Table(
        title=f"top prediction changed ({counts['changed']} rows)", title_justify="left"
    )
    for column in ("", "message", "turns", "label", "current → candidate"):
        changes.add_column(column)
    styles = {"broken": "red", "fixed": "green", "still_wrong": "yellow"}
    for change in result["changed"]:
        changes.add_row(
            Text(change["change"].replace("_", " "), style=styles[change["change"]]),
            Text(_short(change["message"])),
            str(change["history_turns"]),
            Text(change["label"]),
            Text(f"{change['current']} → {change['candidate']}"),
        )
    console.print(changes)
    console.print(
        f"fixed {counts['fixed']}, broken {counts['broken']}, still wrong "
        f"{counts['still_wrong']} ({counts['changed']} of {result['rows']} rows changed)"
    )


@app.command("compare")
def compare(
    candidate: str = typer.Argument(help="Version under the models directory, or a model path."),
    against: str | None = typer.Option(
        None, "--against", help="The version to compare with (default: the one in LATEST)."
    ),
    data: Path = typer.Option(
        ..., "--data", help="JSONL file: message, conversation_history?, label."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Run CANDIDATE and the current version over a data file; show what changed."""
    if against is None:
        against = _latest(get_settings().models_root)
        if against is None:
            raise _fail(f"no --against given and no LATEST under {get_settings().models_root}")
    candidate_dir, current_dir = _model_dir(candidate), _model_dir(against)
    rows = _read_data(data)
    with _progress() as progress:
        current_scored = _score(current_dir, rows, progress)
        candidate_scored = _score(candidate_dir, rows, progress)
    result = {"data": data_reference(data), "sha256": sha256_file(data)} | compare_predictions(
        rows, current_scored, candidate_scored
    )
    if as_json:
        typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
        return
    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 160)  # a pipe or a file: keep rows on one line
    _print_comparison(result, console)


@app.command("score")
def score(
    version: str = typer.Argument(help="Version under the models directory, or a model path."),
    data: Path = typer.Option(
        ..., "--data", help="JSONL file: message, conversation_history?, label."
    ),
    name: str = typer.Option(
        FIELD_SET_NAME, "--name", help="Entry under metrics.field_sets in the model card."
    ),
) -> None:
    """Score VERSION on a data file into its model card (metrics.field_sets.NAME)."""
    model_dir = _model_dir(version)
    rows = _read_data(data)
    with _progress() as progress:
        scored = _score(model_dir, rows, progress)
    entry = field_set_entry(data, scored.probs, rows, scored.labels)
    card_path = model_dir / "model_card.json"
    card = json.loads(card_path.read_text())
    set_field_set(card, name, entry)
    card_path.write_text(json.dumps(card, indent=2))
    typer.echo(
        f"{scored.version} on {entry['data']} ({entry['rows']} rows): "
        f"accuracy {entry['accuracy']:.4f}, macro-F1 {entry['macro_f1']:.4f}, "
        f"ECE {entry['ece']:.4f}; wrote metrics.field_sets.{name} to {card_path}"
    )
