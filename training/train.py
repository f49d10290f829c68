"""Train, calibrate, export and evaluate one ``models/<model_version>/`` directory.

    python -m training.train    # Bitext: the sample in training/data/bitext/ (--bitext)

Steps: assemble and split the data; fit the TF-IDF baseline; fine-tune the encoder; fit the
temperature on the validation split; export ONNX and quantize to int8; check int8/fp32
agreement and score everything on the test split; write the model card and ``models/LATEST``.
The baseline is not saved in the model directory: it is cached under ``var/baselines/``, and
evaluation refits it from the card when the cache lacks it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from intent.evaluation import (
    FIELD_SET_NAME,
    FIELD_SET_PATH,
    classification_report,
    expected_calibration_error,
    field_set_entry,
    read_rows,
    set_field_set,
)
from intent.model_store import read_card, set_latest, write_card
from intent.probabilities import softmax
from intent.routed import open_model
from intent.runner import CALIBRATION_FILE, LABELS_FILE, Classifier, IntentModel
from intent.text_format import EMOJI_AS_NAMES, EMOJI_AS_UNK, HISTORY_CHAR_BUDGET, MAX_LENGTH
from training import calibrate, export, modeling
from training.baseline import cached_baseline
from training.cli_args import parse_args
from training.dataset import DataConfig, build_splits
from training.evaluate import evaluate_rows, format_table
from training.labels import LABEL_TO_ID, LABELS
from training.sources import BITEXT_SAMPLE, CORPUS_PATH, WRITTEN_DIR, write_jsonl

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


@dataclass
class TrainArgs:
    """Command-line arguments of ``python -m training.train``."""

    base_model: str = field(
        default=modeling.DEFAULT_BASE_MODEL,
        metadata={"help": "Hugging Face encoder: the bundled default, a local path or a Hub id"},
    )
    bitext: str | None = field(
        default=str(BITEXT_SAMPLE),
        metadata={
            "help": "Bitext CSV path (default: the sample in training/data/bitext/), "
            "'hub' to download it (needs network), or 'none' to leave it out"
        },
    )
    corpus: str = field(default=str(CORPUS_PATH), metadata={"help": "project corpus JSONL"})
    written: str | None = field(
        default=str(WRITTEN_DIR),
        metadata={"help": "folder of hand-written JSONL files, or 'none' to leave them out"},
    )
    written_repeat: int = field(
        default=1,
        metadata={"help": "how many times each hand-written training row is seen per epoch"},
    )
    models_dir: str = field(default="models", metadata={"help": "where the model directory goes"})
    runs_dir: str = field(default="runs", metadata={"help": "scratch output: splits, fp32 ONNX"})
    encoder_layers: int | None = field(
        default=None,
        metadata={"help": "keep only the bottom N encoder layers (default: all of them)"},
    )
    freeze_word_embeddings: bool = field(
        default=False,
        metadata={"help": "keep the pre-trained token embeddings fixed while fine-tuning"},
    )
    teacher: str | None = field(
        default=None,
        metadata={"help": "model directory whose logits the new model also learns from"},
    )
    distill_weight: float = field(
        default=0.5, metadata={"help": "share of the teacher's term in the loss (with --teacher)"}
    )
    distill_temperature: float = field(
        default=2.0, metadata={"help": "softening temperature of the distillation term"}
    )
    epochs: float = field(default=4.0, metadata={"help": "passes over the training split"})
    batch_size: int = field(default=32, metadata={"help": "examples per optimisation step"})
    learning_rate: float = field(default=8e-5, metadata={"help": "peak AdamW learning rate"})
    head_learning_rate: float = field(
        default=2e-3, metadata={"help": "peak learning rate of the new classification head"}
    )
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay"})
    warmup_ratio: float = field(default=0.06, metadata={"help": "share of steps warming up"})
    seed: int = field(default=13, metadata={"help": "seed of splits, shuffling and init"})
    init_seed: int | None = field(
        default=None,
        metadata={
            "help": "seed of shuffling and init alone (default: --seed); the splits stay "
            "--seed's, so two runs can differ in their start and share their data"
        },
    )
    max_steps: int | None = field(default=None, metadata={"help": "stop after this many steps"})
    subset: int | None = field(
        default=None, metadata={"help": "keep at most this many rows per label and split (smoke)"}
    )
    set_latest: bool = field(default=True, metadata={"help": "point models_dir/LATEST at it"})
    emoji_names: bool = field(
        default=True,
        metadata={
            "help": "spell emoji out as their English names before tokenizing (the "
            "vocabulary has no emoji: left alone, every one is [UNK]; models before v7)"
        },
    )


def _short_name(base_model: str, encoder_layers: int | None = None) -> str:
    packaged = {
        modeling.DEFAULT_BASE_MODEL: "minilm",
        modeling.MULTILINGUAL_BASE_MODEL: "e5small",
        modeling.EUROPEAN_BASE_MODEL: "e5small-eu",
    }
    if base_model in packaged:
        name = packaged[base_model]
    else:
        name = Path(base_model.rstrip("/")).name.lower()
        name = re.sub(r"[^a-z0-9]+", "-", name).strip("-")[:24] or "encoder"
    return name if encoder_layers is None else f"{name}-l{encoder_layers}"


def make_version(args: TrainArgs, data_info: dict[str, Any], created: datetime) -> str:
    """``intent-<model>-<YYYYMMDDHHMM>-<hash>``: sortable by time, unique by content and time."""
    payload = json.dumps([asdict(args), data_info["sources"], created.isoformat()], sort_keys=True)
    digest = hashlib.sha256(payload.encode()).hexdigest()[:7]
    name = _short_name(args.base_model, args.encoder_layers)
    return f"intent-{name}-{created:%Y%m%d%H%M}-{digest}"


def repeat_written(rows: list[dict[str, Any]], times: int) -> list[dict[str, Any]]:
    """The rows, with each hand-written one appearing ``times`` times in all."""
    if times < 1:
        raise ValueError(f"--written-repeat must be at least 1, not {times}")
    return rows + [r for r in rows if r.get("source") == "written"] * (times - 1)


def training_rows(
    train_split: list[dict[str, Any]], subset: int | None, written_repeat: int
) -> list[dict[str, Any]]:
    """The rows a run trains on (the encoder and the baseline alike) from its training split."""
    return repeat_written(_subset(train_split, subset), written_repeat)


def _subset(rows: list[dict[str, Any]], per_label: int | None) -> list[dict[str, Any]]:
    if per_label is None:
        return rows
    kept: dict[str, int] = {}
    out = []
    for row in rows:
        if kept.get(row["label"], 0) < per_label:
            kept[row["label"]] = kept.get(row["label"], 0) + 1
            out.append(row)
    return out


def headline_scores(report: dict[str, Any]) -> dict[str, Any]:
    """The scores a card keeps of an evaluation report."""
    keys = ("accuracy", "macro_f1", "ece", "per_label", "most_confused")
    return {k: report[k] for k in keys}


def score_field_set(
    card: dict[str, Any], model: Classifier, path: Path = FIELD_SET_PATH
) -> dict[str, Any] | None:
    """Score the model on the field set (when the file exists) into ``card``, as
    ``switchyard model score`` does; the promotion gate of ``model use`` compares these."""
    if not path.is_file():
        return None
    rows = read_rows(path, model.info.labels)
    entry = field_set_entry(path, model.predict_rows(rows), rows, model.info.labels)
    set_field_set(card, FIELD_SET_NAME, entry)
    print(
        f"field set {entry['data']}: accuracy {entry['accuracy']:.4f}, "
        f"macro-F1 {entry['macro_f1']:.4f}, ECE {entry['ece']:.4f}"
    )
    return entry


def finish_version(
    card: dict[str, Any], model: Classifier, model_dir: Path, models_dir: str, latest: bool
) -> Path:
    """Score the field set into a derived version's card (``training.route``,
    ``training.trim``), write it and point ``LATEST`` at it when asked; returns its directory."""
    score_field_set(card, model)
    write_card(model_dir, card)
    if latest:
        set_latest(Path(models_dir), card["model_version"])
    print(f"wrote {model_dir}")
    return model_dir


@dataclass
class Run:
    """What the steps after the split share: the model's name, where it goes, its rows."""

    version: str
    model_dir: Path
    run_dir: Path  # scratch: the splits, the tokenizer as loaded, the fp32 graph
    rows: dict[str, list[dict[str, Any]]]  # train (subset and repeats applied), validation, test
    data_info: dict[str, Any]
    emoji_style: str


def prepare_run(args: TrainArgs, created: datetime) -> Run:
    """Assemble and split the data, name the model and write the run's splits."""
    data_config = DataConfig(
        corpus=Path(args.corpus), bitext=args.bitext, written=args.written, seed=args.seed
    )
    splits, data_info = build_splits(data_config)
    rows = {
        "train": training_rows(splits["train"], args.subset, args.written_repeat),
        "validation": _subset(splits["validation"], args.subset),
        "test": _subset(splits["test"], args.subset),
    }
    version = make_version(args, data_info, created)
    run = Run(
        version=version,
        model_dir=Path(args.models_dir) / version,
        run_dir=Path(args.runs_dir) / version,
        rows=rows,
        data_info=data_info,
        emoji_style=EMOJI_AS_NAMES if args.emoji_names else EMOJI_AS_UNK,
    )
    print(
        f"model_version {version}: train {len(rows['train'])}, "
        f"validation {len(rows['validation'])}, test {len(rows['test'])}"
    )
    for name, split_rows in rows.items():
        write_jsonl(split_rows, run.run_dir / "splits" / f"{name}.jsonl")
    return run


def fine_tune(
    args: TrainArgs, run: Run, teacher_logits: np.ndarray | None
) -> tuple[Any, Any, dict[str, Any]]:
    """Load the encoder under its head (its tokenizer saved to the run directory) and
    fine-tune it on the training rows (learning from ``teacher_logits`` too, with
    ``--teacher``): (model, tokenizer, steps, final loss and seconds)."""
    seed = args.seed if args.init_seed is None else args.init_seed
    modeling.seed_everything(seed)
    model = modeling.load_model(
        args.base_model, run.run_dir / "tokenizer", encoder_layers=args.encoder_layers
    )
    fit_started = time.perf_counter()
    tokenizer = _tokenizer(run.run_dir / "tokenizer")
    fit = modeling.train_model(
        model,
        tokenizer,
        run.rows["train"],
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        head_learning_rate=args.head_learning_rate,
        weight_decay=args.weight_decay,
        warmup_ratio=args.warmup_ratio,
        seed=seed,
        max_steps=args.max_steps,
        teacher_logits=teacher_logits,
        distill_weight=args.distill_weight,
        distill_temperature=args.distill_temperature,
        emoji_style=run.emoji_style,
        freeze_word_embeddings=args.freeze_word_embeddings,
    )
    return model, tokenizer, fit | {"seconds": time.perf_counter() - fit_started}


def calibration_entry(logits: np.ndarray, y_true: np.ndarray, temperature: float) -> dict:
    """``calibration.json`` (and the card's ``metrics.calibration``): the validation split's
    ECE and NLL before and after temperature scaling."""
    return {
        "method": "temperature scaling",
        "fitted_on": "validation",
        "temperature": temperature,
        "validation_ece_before": expected_calibration_error(softmax(logits), y_true),
        "validation_ece_after": expected_calibration_error(softmax(logits, temperature), y_true),
        "validation_nll_before": calibrate.negative_log_likelihood(logits, y_true, 1.0),
        "validation_nll_after": calibrate.negative_log_likelihood(logits, y_true, temperature),
    }


def write_model_files(model: Any, run: Run, calibration: dict[str, Any]) -> tuple[Path, str]:
    """The model directory but its card: the int8 ONNX graph, the tokenizer, the labels and
    the calibration (not the baseline: 11 MB). Returns the fp32 graph, left in the run
    directory, and the card's description of the quantization."""
    run.model_dir.mkdir(parents=True, exist_ok=True)
    fp32_path = export.export_onnx(model, run.run_dir / "model.fp32.onnx")
    quantization = export.quantize_int8(
        fp32_path,
        run.model_dir / export.ONNX_FILE,
        calibration=export.calibration_feeds(
            run.run_dir / "tokenizer", run.rows["train"], run.emoji_style
        ),
    )
    for name in TOKENIZER_FILES:
        src = run.run_dir / "tokenizer" / name
        if src.is_file():
            shutil.copy2(src, run.model_dir / name)
    (run.model_dir / LABELS_FILE).write_text(json.dumps(LABELS, indent=2))
    (run.model_dir / CALIBRATION_FILE).write_text(json.dumps(calibration, indent=2))
    return fp32_path, quantization


def model_card(
    args: TrainArgs,
    run: Run,
    created: datetime,
    model: Any,
    temperature: float,
    fit: dict,
    quantization: str = export.QUANTIZATION,
) -> dict[str, Any]:
    """The card as training writes it first; the metrics follow once the test split is scored."""
    return {
        "model_version": run.version,
        "created_at": created.isoformat(timespec="seconds"),
        "base_model": args.base_model,
        "encoder_layers": model.encoder.config.num_hidden_layers,
        "teacher": Path(args.teacher).name if args.teacher else None,
        "onnx_file": export.ONNX_FILE,
        "quantization": quantization,
        "labels": LABELS,
        "label_guide": "docs/label-guide.md",
        "temperature": temperature,
        "max_length": MAX_LENGTH,
        "input": {
            "format": "pair: message, then history most recent first with role markers",
            "max_length": MAX_LENGTH,
            "history_char_budget": HISTORY_CHAR_BUDGET,
            "truncation": "longest_first",
            "emoji": run.emoji_style,
        },
        "data": run.data_info
        | {"split_sizes": {name: len(rows) for name, rows in run.rows.items()}},
        "training": asdict(args)
        | {
            "steps": fit["steps"],
            "final_loss": fit["final_loss"],
            "fine_tune_seconds": round(fit["seconds"], 1),
        },
    }


def score_test_split(
    run: Run, baseline: Any, fp32_logits: np.ndarray, temperature: float
) -> tuple[dict[str, Any], dict[str, Any], IntentModel]:
    """The int8 model as served (writing ``eval/test-split/``) beside the baseline and the
    fp32 model on the test split, and int8/fp32 agreement: (the card's ``metrics.test`` and
    ``test_by_source``, the evaluation result, the loaded int8 model)."""
    rows = run.rows["test"]
    y_test = _label_ids(rows)
    onnx_model = IntentModel(run.model_dir, intra_op_threads=0)
    result = evaluate_rows(
        run.model_dir,
        rows,
        run.model_dir / "eval" / "test-split",
        name="test-split",
        model=onnx_model,
        baseline=baseline,
    )
    int8_pred = onnx_model.predict_rows(rows).argmax(axis=1)
    fp32_pred = fp32_logits.argmax(axis=1)
    metrics = {
        "test": {
            "int8": headline_scores(result["transformer"]),
            "fp32": {
                "accuracy": float((fp32_pred == y_test).mean()),
                "macro_f1": classification_report(y_test, fp32_pred, LABELS)["macro_f1"],
                "ece": expected_calibration_error(softmax(fp32_logits, temperature), y_test),
                "ece_uncalibrated": expected_calibration_error(softmax(fp32_logits), y_test),
            },
            "baseline_tfidf_lr": headline_scores(result["baseline"]),
            "int8_fp32_top1_agreement": float((int8_pred == fp32_pred).mean()),
        },
        "test_by_source": scores_by_source(rows, int8_pred),
    }
    return metrics, result, onnx_model


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(TrainArgs, argv)
    started = time.perf_counter()
    created = datetime.now(UTC)
    run = prepare_run(args, created)
    teacher_logits = _teacher_logits(args.teacher, run.rows["train"], run.data_info)
    baseline = cached_baseline(run.rows["train"], args.seed)  # evaluation finds it in the cache

    model, tokenizer, fit = fine_tune(args, run, teacher_logits)
    y_val = _label_ids(run.rows["validation"])
    val_logits = modeling.predict_logits(
        model, tokenizer, run.rows["validation"], emoji_style=run.emoji_style
    )
    temperature = calibrate.fit_temperature(val_logits, y_val)
    test_logits = modeling.predict_logits(
        model, tokenizer, run.rows["test"], emoji_style=run.emoji_style
    )

    calibration = calibration_entry(val_logits, y_val, temperature)
    fp32_path, quantization = write_model_files(model, run, calibration)
    card = model_card(args, run, created, model, temperature, fit, quantization)
    write_card(run.model_dir, card)

    metrics, result, onnx_model = score_test_split(run, baseline, test_logits, temperature)
    card["metrics"] = metrics | {"calibration": calibration}
    card["size_bytes"] = {
        "onnx_int8": (run.model_dir / export.ONNX_FILE).stat().st_size,
        "onnx_fp32": fp32_path.stat().st_size,
    }
    score_field_set(card, onnx_model)
    card["training"]["total_seconds"] = round(time.perf_counter() - started, 1)
    write_card(run.model_dir, card)
    if args.set_latest:
        set_latest(Path(args.models_dir), run.version)

    print(format_table(result))
    print(f"int8/fp32 top-1 agreement: {metrics['test']['int8_fp32_top1_agreement']:.4f}")
    print(
        f"temperature {temperature:.3f}; fine-tuning {fit['seconds']:.0f}s; "
        f"total {card['training']['total_seconds']:.0f}s; "
        f"int8 ONNX {card['size_bytes']['onnx_int8'] / 1e6:.1f} MB"
    )
    print(f"wrote {run.model_dir}")
    return run.model_dir


def _label_ids(rows: list[dict[str, Any]]) -> np.ndarray:
    return np.array([LABEL_TO_ID[r["label"]] for r in rows])


def scores_by_source(rows: list[dict[str, Any]], predicted: np.ndarray) -> dict[str, Any]:
    """Accuracy and macro-F1 of the test split's rows of each source (int8 predictions)."""
    out: dict[str, Any] = {}
    for source in sorted({r.get("source", "") for r in rows}):
        idx = np.array([i for i, r in enumerate(rows) if r.get("source", "") == source])
        y = np.array([LABEL_TO_ID[rows[i]["label"]] for i in idx])
        report = classification_report(y, predicted[idx], LABELS)
        out[source] = {
            "rows": len(idx),
            "accuracy": float((predicted[idx] == y).mean()),
            "macro_f1": report["macro_f1"],
        }
        print(f"test split, {source} rows ({len(idx)}): accuracy {out[source]['accuracy']:.4f}")
    return out


def _teacher_logits(
    teacher: str | None, rows: list[dict[str, Any]], data_info: dict[str, Any]
) -> np.ndarray | None:
    """The teacher model's logits for ``rows`` (its int8 ONNX graph, as served; a routed
    version's routes each divide theirs by their temperature).

    The teacher must come from the same splits: one that trained on this run's validation or
    test rows would leak them into the student and flatter its scores.
    """
    if teacher is None:
        return None
    card = read_card(Path(teacher))
    theirs = card.get("data", {}).get("split_fingerprints", {})
    ours = data_info["split_fingerprints"]
    if any(theirs.get(split) != ours[split] for split in ("validation", "test")):
        raise ValueError(
            f"teacher {teacher} was trained on other splits ({theirs} vs {ours}); "
            "train it with the same data and seed"
        )
    print(f"teacher {teacher}: scoring {len(rows)} training rows")
    # A routed teacher gives each row its route's logits over that route's temperature.
    model = open_model(Path(teacher), intra_op_threads=0)
    if list(model.info.labels) != list(LABELS):
        raise ValueError(f"teacher {teacher} has other labels than this run: {model.info.labels}")
    return model.logits_for_messages(
        [r["message"] for r in rows], [r.get("conversation_history") for r in rows]
    )


def _tokenizer(path: Path) -> Any:
    from intent.encoding import load_tokenizer

    return load_tokenizer(path)


if __name__ == "__main__":
    main()
