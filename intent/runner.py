"""The intent model: an int8 ONNX Runtime session, its tokenizer and its calibration.

The one runner of a model directory: the Serve replicas, ``training.evaluate`` (and so the
model card), the notebook and the benchmarks all use it. It and ``int8_kernels`` alone import
onnxruntime, so the HTTP front never pays for it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from intent.encoding import load_tokenizer

# models/ belongs to intent.model_store; its MODEL_CARD and resolve_model_dir are also
# importable from here, where callers (training, the benchmarks, tests) have found them.
from intent.model_store import MODEL_CARD as MODEL_CARD
from intent.model_store import read_card
from intent.model_store import resolve_model_dir as resolve_model_dir
from intent.probabilities import softmax
from intent.session_source import session_source
from intent.text_format import (
    EMOJI_AS_UNK,
    MAX_LENGTH,
    TextPair,
    format_input,
    spell_pair,
)

LABELS_FILE = "labels.json"
CALIBRATION_FILE = "calibration.json"
# Rows per ONNX Runtime call when scoring a data set (serving batches are smaller).
EVALUATION_CHUNK = 256
DEFAULT_ONNX_FILE = "model.onnx"


@dataclass(frozen=True)
class ModelInfo:
    """What a caller needs to interpret the probabilities."""

    model_version: str
    labels: tuple[str, ...]
    max_length: int
    temperature: float
    # How emoji reach the model (``text_format.EMOJI_AS_*``); models before v7 read them as [UNK].
    emoji_style: str = EMOJI_AS_UNK


# ORT's fused SkipLayerNormalization ran slower than the Add and LayerNormalization it
# replaces: v1's graph ran 1.20x faster at batch 32 without it (measured in the
# run recorded as "Intent model: speed against v1, and what was tried", in RESULTS.md's history).
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]


class Classifier(ABC):
    """What every model runner offers: calibrated probabilities from ``logits``.

    ``IntentModel`` runs one model directory; ``intent.routed.RoutedModel`` sends each input to
    one of two. ``logits`` returns ``[len(pairs), n_labels]``; ``predict`` divides them by
    ``info.temperature`` and takes the softmax.
    """

    info: ModelInfo

    @abstractmethod
    def logits(self, pairs: Sequence[TextPair]) -> np.ndarray:
        """Uncalibrated logits, shape ``[len(pairs), n_labels]``."""

    def predict(self, pairs: Sequence[TextPair]) -> np.ndarray:
        """Calibrated probabilities ``softmax(logits / T)``, float32 ``[len(pairs), n_labels]``."""
        if not pairs:
            return np.zeros((0, len(self.info.labels)), dtype=np.float32)
        return softmax(self.logits(pairs), self.info.temperature)

    def logits_for_messages(
        self,
        messages: Sequence[str],
        histories: Sequence[Sequence[Mapping[str, str]] | None] | None = None,
    ) -> np.ndarray:
        """Uncalibrated logits of messages (with optional histories), in chunks."""
        histories = histories if histories is not None else [None] * len(messages)
        pairs = [format_input(m, h) for m, h in zip(messages, histories, strict=True)]
        out = np.zeros((0, len(self.info.labels)), dtype=np.float32)
        chunks = [
            self.logits(pairs[i : i + EVALUATION_CHUNK])
            for i in range(0, len(pairs), EVALUATION_CHUNK)
        ]
        return np.concatenate(chunks) if chunks else out

    def predict_messages(
        self,
        messages: Sequence[str],
        histories: Sequence[Sequence[Mapping[str, str]] | None] | None = None,
    ) -> np.ndarray:
        """Calibrated probabilities of messages (with optional histories)."""
        return softmax(self.logits_for_messages(messages, histories), self.info.temperature)

    def predict_rows(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Calibrated probabilities for rows of the evaluation format
        (``message``, optional ``conversation_history``)."""
        return self.predict_messages(
            [r["message"] for r in rows], [r.get("conversation_history") for r in rows]
        )


class IntentModel(Classifier):
    """Loads one model directory; ``predict`` turns text pairs into calibrated probabilities."""

    def __init__(
        self,
        model_dir: Path,
        *,
        intra_op_threads: int = 1,
        inter_op_threads: int = 1,
        allow_spinning: bool = True,
    ) -> None:
        model_dir = Path(model_dir)
        card = read_card(model_dir)
        labels = tuple(json.loads((model_dir / LABELS_FILE).read_text()))
        temperature = float(json.loads((model_dir / CALIBRATION_FILE).read_text())["temperature"])
        self.info = ModelInfo(
            model_version=str(card.get("model_version") or model_dir.name),
            labels=labels,
            max_length=int(
                card.get("max_length") or card.get("input", {}).get("max_length") or MAX_LENGTH
            ),
            temperature=temperature,
            emoji_style=str(card.get("input", {}).get("emoji") or EMOJI_AS_UNK),
        )

        options = ort.SessionOptions()
        # ORT ignores OMP_NUM_THREADS and defaults to one thread per core in every replica;
        # on a shared 2-core box that oversubscribes, so the counts are always explicit.
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = inter_op_threads
        # Idle ORT threads spin for a while by default: fast when the cores are the model's
        # alone, stolen time when the HTTP front shares them.
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if allow_spinning else "0"
        )
        options.add_session_config_entry(
            "session.inter_op.allow_spinning", "1" if allow_spinning else "0"
        )
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            session_source(str(model_dir / card.get("onnx_file", DEFAULT_ONNX_FILE))),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=DISABLED_OPTIMIZERS,
        )
        self._input_names = {i.name for i in self._session.get_inputs()}

        # The tokenizer set up exactly as in training (truncation, padding).
        self._tokenizer = load_tokenizer(model_dir, self.info.max_length)

    def encode(self, pairs: Sequence[TextPair]) -> dict[str, np.ndarray]:
        """Tokenize a batch, padded to its longest entry (as ``intent.encoding.encode``)."""
        style = self.info.emoji_style
        inputs = [
            (first, second) if second else first
            for first, second in (spell_pair(pair, style) for pair in pairs)
        ]
        encodings = self._tokenizer.encode_batch(inputs)
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        return {name: value for name, value in feeds.items() if name in self._input_names}

    def logits(self, pairs: Sequence[TextPair]) -> np.ndarray:
        """Uncalibrated logits, shape ``[len(pairs), n_labels]``.

        The model's cost grows with every token it runs, padding included, so a batch of
        mixed lengths runs as a few groups of similar length (see ``plan_runs``).
        """
        feeds = self.encode(pairs)
        lengths = feeds["attention_mask"].sum(axis=1)
        out = np.empty((len(pairs), len(self.info.labels)), dtype=np.float32)
        for group in plan_runs(lengths.tolist()):
            index = np.asarray(group)
            width = int(lengths[index].max())  # padding is on the right: cut it off
            (out[index],) = self._session.run(
                ["logits"], {name: value[index, :width] for name, value in feeds.items()}
            )
        return out


# What one extra ONNX Runtime run costs beyond its tokens, in tokens. First measured at 12
# (0.7-1.1 ms per run against ~0.09 ms per token); with v7 on one thread (2026-11-26, VNNI host)
# a run costs 0.1-0.3 ms over ~0.07 ms per token, and 6 served realistic batches of 32 and 64
# 7% faster than 12, 8 and 16 the same ("Inference — 2026-11-26 02:01" in RESULTS.md's git history).
RUN_OVERHEAD_TOKENS = 6


def plan_runs(
    lengths: Sequence[int], overhead_tokens: int = RUN_OVERHEAD_TOKENS
) -> list[list[int]]:
    """Split a batch into model runs that together process the fewest (padded) tokens.

    Every run pads its entries to its longest one and costs ``overhead_tokens`` on top.
    Sorted by length, the best split is a set of contiguous groups: dynamic programming
    over the points where the length changes finds it exactly. One long conversation
    history no longer pads twenty short messages to 128 tokens.
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    ordered = [lengths[i] for i in order]
    # A group may end only where the length changes (or at the end).
    ends = [
        i + 1 for i in range(len(ordered)) if i + 1 == len(ordered) or ordered[i + 1] != ordered[i]
    ]
    best: dict[int, tuple[int, int]] = {0: (0, 0)}  # end -> (cost, start of its last group)
    for end in ends:
        best[end] = min(
            (cost + overhead_tokens + (end - start) * ordered[end - 1], start)
            for start, (cost, _) in best.items()
            if start < end
        )
    groups: list[list[int]] = []
    end = len(ordered)
    while end:
        start = best[end][1]
        groups.append(order[start:end])
        end = start
    return groups[::-1]
