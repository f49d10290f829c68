"""Assemble the training sources and split them, the same way in training and evaluation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training import sources, splits


@dataclass
class DataConfig:
    """Everything that decides the rows of each split (recorded in the model card)."""

    corpus: Path = sources.CORPUS_PATH
    bitext: str | None = str(sources.BITEXT_SAMPLE)  # a CSV path, "hub", or None: no Bitext
    written: str | None = str(sources.WRITTEN_DIR)  # a folder of JSONL files, or None
    seed: int = 13
    val_frac: float = 0.15
    test_frac: float = 0.15
    near_dup_threshold: float = 0.85


def build_splits(config: DataConfig) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Rows per split, plus a description of the sources (paths, hashes, row counts)."""
    rows = sources.load_corpus(Path(config.corpus))
    described = [
        {
            "name": "switchyard-corpus",
            "path": str(config.corpus),
            "sha256": sources.sha256_file(Path(config.corpus)),
            "rows": len(rows),
        }
    ]
    if config.written is not None and config.written.lower() != "none":
        written_rows = sources.load_written(Path(config.written))
        rows += written_rows
        files = sources.written_files(Path(config.written))
        described.append(
            {
                "name": "switchyard-written",
                "path": str(config.written),
                "sha256": sources.sha256_files(files),
                "files": len(files),
                "rows": len(written_rows),
            }
        )
    bitext_path = sources.resolve_bitext(config.bitext)
    if bitext_path is not None:
        bitext_rows = sources.load_bitext_csv(bitext_path, seed=config.seed)
        rows += bitext_rows
        described.append(
            {
                "name": "bitext-customer-support",
                "origin": "hub:" + sources.BITEXT_HUB_ID if config.bitext == "hub" else "csv",
                "path": str(bitext_path),
                "sha256": sources.sha256_file(bitext_path),
                "rows": len(bitext_rows),
                "dropped_intents": sorted(sources.BITEXT_DROPPED),
            }
        )
    result = splits.make_splits(
        rows,
        seed=config.seed,
        val_frac=config.val_frac,
        test_frac=config.test_frac,
        near_dup_threshold=config.near_dup_threshold,
    )
    dropped = result.pop("_dropped_near_duplicates")
    info = {
        "sources": described,
        "seed": config.seed,
        "val_frac": config.val_frac,
        "test_frac": config.test_frac,
        "near_dup_threshold": config.near_dup_threshold,
        "dropped_near_duplicates": dropped,
        "split_sizes": {name: len(result[name]) for name in splits.SPLITS},
        "split_fingerprints": {
            name: splits.split_fingerprint(result[name]) for name in splits.SPLITS
        },
    }
    return result, info
