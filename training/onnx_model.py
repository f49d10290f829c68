"""Run a model directory (int8 ONNX + tokenizer + labels + temperature) with ONNX Runtime."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from training.encoding import encode, load_tokenizer
from training.metrics import softmax

MODEL_CARD = "model_card.json"
LABELS_FILE = "labels.json"
CALIBRATION_FILE = "calibration.json"


class OnnxIntentModel:
    """Calibrated intent probabilities from a ``models/<model_version>/`` directory."""

    def __init__(self, model_dir: Path | str, threads: int = 0) -> None:
        import onnxruntime as ort

        self.model_dir = Path(model_dir)
        card = json.loads((self.model_dir / MODEL_CARD).read_text())
        self.model_version: str = card["model_version"]
        self.labels: list[str] = json.loads((self.model_dir / LABELS_FILE).read_text())
        self.temperature: float = json.loads((self.model_dir / CALIBRATION_FILE).read_text())[
            "temperature"
        ]
        self.tokenizer = load_tokenizer(self.model_dir)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(
            str(self.model_dir / card["onnx_file"]), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self.session.get_inputs()}

    def logits(
        self,
        messages: Sequence[str],
        histories: Sequence[Sequence[Mapping[str, str]] | None] | None = None,
        batch_size: int = 64,
    ) -> np.ndarray:
        """Uncalibrated logits (batch x labels)."""
        outs = []
        histories = histories if histories is not None else [None] * len(messages)
        for start in range(0, len(messages), batch_size):
            feed = encode(
                self.tokenizer,
                messages[start : start + batch_size],
                histories[start : start + batch_size],
            )
            feed = {k: v for k, v in feed.items() if k in self._inputs}
            outs.append(self.session.run(["logits"], feed)[0])
        return np.concatenate(outs) if outs else np.zeros((0, len(self.labels)), np.float32)

    def predict_proba(
        self,
        messages: Sequence[str],
        histories: Sequence[Sequence[Mapping[str, str]] | None] | None = None,
    ) -> np.ndarray:
        """Temperature-scaled probabilities (batch x labels)."""
        return softmax(self.logits(messages, histories), self.temperature)

    def predict_rows(self, rows: list[dict[str, Any]]) -> np.ndarray:
        """Probabilities for rows in the evaluation format."""
        return self.predict_proba(
            [r["message"] for r in rows], [r.get("conversation_history") for r in rows]
        )
