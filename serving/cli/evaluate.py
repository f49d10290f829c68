"""``switchyard model compare | score``: run model versions over a data file, here.

Both run the models in this process through ``intent.runner`` (as the replicas do, in the
evaluation's chunks). ``compare`` shows what changed between two versions
(``serving.cli.comparison``); ``score`` writes a field-set entry into a version's card.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from core.settings import get_settings
from intent import model_store
from intent.evaluation import (
    FIELD_SET_NAME,
    DataFileError,
    data_reference,
    field_set_entry,
    read_rows,
    set_field_set,
    sha256_file,
)
from serving.cli.common import fail
from serving.cli.comparison import Scored, compare_predictions, print_comparison

if TYPE_CHECKING:
    from intent.runner import Classifier


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
        against = model_store.latest_version(get_settings().models_root)
        if against is None:
            raise fail(f"no --against given and no LATEST under {get_settings().models_root}")
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
    print_comparison(result, console)


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
    card = model_store.read_card(model_dir)
    set_field_set(card, name, entry)
    card_path = model_store.write_card(model_dir, card)
    typer.echo(
        f"{scored.version} on {entry['data']} ({entry['rows']} rows): "
        f"accuracy {entry['accuracy']:.4f}, macro-F1 {entry['macro_f1']:.4f}, "
        f"ECE {entry['ece']:.4f}; wrote metrics.field_sets.{name} to {card_path}"
    )


def _model_dir(name: str) -> Path:
    """A version under the models directory, or a path to a model directory."""
    root = get_settings().models_root
    for candidate in (root / name, Path(name)):
        if model_store.has_card(candidate):
            return candidate
    raise fail(f"no model {name!r} under {root} (nor a model directory at that path)")


def _read_data(path: Path) -> list[dict[str, Any]]:
    try:
        rows = read_rows(path)
    except (OSError, DataFileError) as exc:
        raise fail(f"cannot read data file {path}: {exc}") from exc
    if not rows:
        raise fail(f"data file {path} holds no rows")
    return rows


def _load(model_dir: Path) -> Classifier:
    from intent.routed import open_model

    try:
        # All cores, as training.evaluate runs it: the card's numbers and these agree.
        return open_model(model_dir, intra_op_threads=0)
    except Exception as exc:
        raise fail(f"model {str(model_dir)!r} does not load: {exc}") from exc


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


def _score(model_dir: Path, rows: list[dict[str, Any]], progress: Progress) -> Scored:
    """Run one model over every row, in the chunks ``Classifier.predict_rows`` uses."""
    from intent.runner import EVALUATION_CHUNK

    task = progress.add_task(f"loading {model_dir.name}", total=len(rows))
    model = _load(model_dir)
    unknown = sorted({r["label"] for r in rows} - set(model.info.labels))
    if unknown:
        raise fail(f"labels {unknown} of the data file are not labels of {model_dir.name}")
    progress.update(task, description=f"scoring {model_dir.name}")
    chunks = []
    for start in range(0, len(rows), EVALUATION_CHUNK):
        chunk = rows[start : start + EVALUATION_CHUNK]
        chunks.append(model.predict_rows(chunk))
        progress.advance(task, len(chunk))
    return Scored(
        version=model_dir.name,
        model_version=model.info.model_version,
        labels=model.info.labels,
        probs=np.concatenate(chunks),
    )
