"""Make a new version of a trained model with its vocabulary cut to the languages it serves.

    python -m training.trim --model models/<version>/other --languages en,de,es,fr,it,nl,pt

Keeps the pieces that the ``--top-words`` most frequent words of each language use (wordfreq's
lists, in the forms text spells them), every piece the model met in its training split, single
characters and pieces with no letter (``training.vocabulary``). The new version's word
embeddings are the source's rows for those pieces, nothing retrained; its temperature is fitted
again on the validation split and it is scored like a trained version (test split, field set),
with the rows whose segmentation the cut changed counted in its card's ``vocabulary``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from intent.encoding import load_tokenizer
from intent.evaluation import FIELD_SET_PATH, read_rows
from intent.model_store import read_card, write_card
from intent.runner import CALIBRATION_FILE, IntentModel
from intent.text_format import EMOJI_AS_UNK
from training import calibrate, vocabulary
from training.cli_args import parse_args
from training.evaluate import evaluate_rows, load_splits_for_model
from training.labels import LABEL_TO_ID, LABELS
from training.train import calibration_entry, finish_version, headline_scores, scores_by_source

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
# Written anew for the new version (calibration.json is copied, then fitted again).
REWRITTEN = {TOKENIZER_FILE, TOKENIZER_CONFIG, "model_card.json", "eval"}


@dataclass
class TrimArgs:
    """Command-line arguments of ``python -m training.trim``."""

    model: str = field(metadata={"help": "model directory with a Unigram tokenizer"})
    languages: str = field(
        default="en,de,es,fr,it,nl,pt",
        metadata={"help": "comma-separated ISO 639-1 codes whose word lists decide what stays"},
    )
    top_words: int = field(
        default=50_000, metadata={"help": "how many of each language's most frequent words"}
    )
    fp32: str | None = field(
        default=None,
        metadata={"help": "the source's fp32 graph (its run directory): cut too, for agreement"},
    )
    models_dir: str = field(default="models", metadata={"help": "where the version is written"})
    set_latest: bool = field(default=False, metadata={"help": "point models/LATEST at it"})


def trimmed_version(source: str, kept: list[int], created: datetime) -> str:
    """The source's name with a new time and a hash of the source and the kept pieces."""
    family = source.rsplit("-", 2)[0]
    digest = hashlib.sha256(f"{source}\n{kept}".encode()).hexdigest()[:7]
    return f"{family}-{created:%Y%m%d%H%M}-{digest}"


def kept_pieces(
    tokenizer: Tokenizer,
    spec: dict[str, Any],
    languages: list[str],
    top_words: int,
    training_inputs: list[vocabulary.ModelInput],
) -> tuple[list[int], dict[str, int]]:
    """The ids to keep, sorted, and how many each source of pieces brought."""
    import emoji
    import wordfreq

    vocab = spec["model"]["vocab"]
    special = {token["id"] for token in spec["added_tokens"]} | {spec["model"]["unk_id"]}
    base = vocabulary.always_kept(vocab) | special
    words: set[int] = set()
    for language in languages:
        top = wordfreq.top_n_list(language, top_words)
        words |= vocabulary.pieces_of(tokenizer, vocabulary.word_forms(top))
    # The English names replies spell emoji as ("⭐" -> "star").
    names = [data["en"].strip(":").replace("_", " ") for data in emoji.EMOJI_DATA.values()]
    words |= vocabulary.pieces_of(tokenizer, vocabulary.word_forms(names))
    trained = vocabulary.pieces_of(tokenizer, training_inputs)
    kept = sorted(base | words | trained)
    counts = {
        "characters_and_symbols": len(base),
        "word_lists": len(words - base),
        "training_split_only": len(trained - base - words),
    }
    return kept, counts


def changed_rows(
    before: Tokenizer,
    after: Tokenizer,
    kept: list[int],
    rows: list[dict[str, Any]],
    emoji_style: str,
) -> int:
    """How many of ``rows`` the cut segments differently."""
    inputs = vocabulary.model_inputs(rows, emoji_style)
    return len(vocabulary.changed_segmentation(before, after, kept, inputs))


def recalibrate(model_dir: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Fit the temperature on ``rows`` (validation) and write ``calibration.json``."""
    model = IntentModel(model_dir, intra_op_threads=0)
    logits = model.logits_for_messages(
        [r["message"] for r in rows], [r.get("conversation_history") for r in rows]
    )
    y_true = np.array([LABEL_TO_ID[r["label"]] for r in rows])
    entry = calibration_entry(logits, y_true, calibrate.fit_temperature(logits, y_true))
    (model_dir / CALIBRATION_FILE).write_text(json.dumps(entry, indent=2))
    return entry


def fp32_agreement(
    model_dir: Path, fp32_path: Path, kept: list[int], vocab_size: int, rows: list[dict[str, Any]]
) -> float:
    """Top-1 agreement on ``rows`` of the version's int8 graph with the fp32 graph cut alike."""
    import onnx

    card = read_card(model_dir)
    with tempfile.TemporaryDirectory() as tmp:
        fp32_dir = Path(tmp) / "fp32"
        shutil.copytree(model_dir, fp32_dir, ignore=lambda _d, names: {"eval"} & set(names))
        graph = onnx.load(str(fp32_path))
        vocabulary.trim_embedding_tables(graph.graph, kept, vocab_size)
        onnx.save(graph, str(fp32_dir / card["onnx_file"]))
        fp32 = IntentModel(fp32_dir, intra_op_threads=0).predict_rows(rows).argmax(axis=1)
    int8 = IntentModel(model_dir, intra_op_threads=0).predict_rows(rows).argmax(axis=1)
    return float((int8 == fp32).mean())


def write_cut_model(
    source_dir: Path, model_dir: Path, spec: dict[str, Any], kept: list[int], onnx_file: str
) -> list[str]:
    """The source's directory with only the ``kept`` pieces in its tokenizer and its graph's
    embedding tables (all but the card and ``eval/``); returns the tables' names."""
    import onnx

    shutil.copytree(source_dir, model_dir, ignore=lambda _d, names: REWRITTEN & set(names))
    tokenizer = vocabulary.trimmed_tokenizer(spec, kept)
    (model_dir / TOKENIZER_FILE).write_text(json.dumps(tokenizer, ensure_ascii=False))
    config = json.loads((source_dir / TOKENIZER_CONFIG).read_text())
    config = vocabulary.trimmed_config(config, kept)
    (model_dir / TOKENIZER_CONFIG).write_text(json.dumps(config, indent=2, ensure_ascii=False))
    graph = onnx.load(str(source_dir / onnx_file))
    tables = vocabulary.trim_embedding_tables(graph.graph, kept, len(spec["model"]["vocab"]))
    onnx.save(graph, str(model_dir / onnx_file))
    return tables


def build(args: TrimArgs, created: datetime | None = None) -> Path:
    """Write the trimmed version, scored; returns its directory."""
    created = created or datetime.now(UTC)
    source_dir = Path(args.model)
    card = read_card(source_dir)
    emoji_style = card.get("input", {}).get("emoji", EMOJI_AS_UNK)
    spec = json.loads((source_dir / TOKENIZER_FILE).read_text())
    before = load_tokenizer(source_dir)
    splits = load_splits_for_model(source_dir)
    languages = [code.strip() for code in args.languages.split(",") if code.strip()]
    training_inputs = vocabulary.model_inputs(splits["train"], emoji_style)
    kept, counts = kept_pieces(before, spec, languages, args.top_words, training_inputs)
    vocab_size = len(spec["model"]["vocab"])
    print(f"keeping {len(kept):,} of {vocab_size:,} pieces: {counts}")

    model_dir = Path(args.models_dir) / trimmed_version(card["model_version"], kept, created)
    tables = write_cut_model(source_dir, model_dir, spec, kept, card["onnx_file"])
    after = load_tokenizer(model_dir)

    field_rows = read_rows(FIELD_SET_PATH, LABELS) if FIELD_SET_PATH.is_file() else []
    card.update(
        model_version=model_dir.name,
        created_at=created.isoformat(timespec="seconds"),
        vocabulary={
            "from": card["model_version"],
            "pieces": len(kept),
            "pieces_before": vocab_size,
            "kept_for": counts,
            "word_lists": f"wordfreq top {args.top_words:,} words of {', '.join(languages)}",
            "tables": tables,
            "rows_segmented_otherwise": {
                name: changed_rows(before, after, kept, rows, emoji_style)
                for name, rows in (
                    ("validation", splits["validation"]),
                    ("test", splits["test"]),
                    ("field_set", field_rows),
                )
            },
        },
    )
    write_card(model_dir, card)
    calibration = recalibrate(model_dir, splits["validation"])
    card["temperature"] = calibration["temperature"]
    card["size_bytes"] = {"onnx_int8": (model_dir / card["onnx_file"]).stat().st_size}
    write_card(model_dir, card)

    model = IntentModel(model_dir, intra_op_threads=0)
    test = splits["test"]
    result = evaluate_rows(
        model_dir, test, model_dir / "eval" / "test-split", name="test-split", model=model
    )
    predicted = model.predict_rows(test).argmax(axis=1)
    if args.fp32:
        agreement = fp32_agreement(model_dir, Path(args.fp32), kept, vocab_size, test)
        card["vocabulary"]["int8_fp32_agreement"] = "both graphs cut alike"
    else:  # the source's figure: the cut changes both graphs alike where segmentation holds
        agreement = card["metrics"]["test"]["int8_fp32_top1_agreement"]
        card["vocabulary"]["int8_fp32_agreement"] = "the source's, measured before the cut"
    card["metrics"] = {
        "test": {
            "int8": headline_scores(result["transformer"]),
            "baseline_tfidf_lr": headline_scores(result["baseline"]),
            "int8_fp32_top1_agreement": agreement,
        },
        "test_by_source": scores_by_source(test, predicted),
        "calibration": calibration,
    }
    return finish_version(card, model, model_dir, args.models_dir, args.set_latest)


def main(argv: list[str] | None = None) -> Path:
    return build(parse_args(TrimArgs, argv))


if __name__ == "__main__":
    main()
