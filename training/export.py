"""Export the fine-tuned model to ONNX (fp32), then quantize it to int8.

Schemes for the MatMuls, all with int8 weights per output channel:

* ``channelwise`` (the default since v8, ``training/channelwise.py``): activations quantized
  with fixed scales, one per input channel (GELU outputs: one shared by all but their widest
  channels, since v9), measured on the training messages and folded into the weights.
  Batch-invariant, no scale computed at run time, v9's graph a few percent faster than v1's.
* ``rowwise`` (v4-v7, ``training/rowwise.py``): each token's activations quantized at run time
  with a scale of its own. Batch-invariant, int8 agrees with fp32 on 99.6% of test answers,
  but finding the scales costs a quarter of the model's time.
* ``static`` (v2, v3): activations quantized with fixed scales measured once on a
  calibration set. Batch-invariant too, but one scale per tensor for every token agreed
  with fp32 on only 98-99% of answers.
* ``dynamic`` (v1): activation scales computed per batch at run time, one per tensor: the same
  message's confidence moved by up to 0.09 with its batch.
* ``blockwise``: MatMulNBits, weights and activations in blocks of 32; agrees best, runs
  slowest.

The word-embedding table, a third of the weights, is stored as int8 with one scale per row:
a single scale for the whole table (what ``quantize_dynamic`` does for Gather) moved about 1.5%
of test predictions, per-row scales keep int8 and fp32 in agreement at a similar file size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from intent.text_format import EMOJI_AS_UNK
from training import channelwise
from training.rowwise import quantize_rowwise

INPUT_NAMES = ["input_ids", "attention_mask", "token_type_ids"]
ONNX_FILE = "model.onnx"  # int8; the name serving loads


def export_onnx(model: Any, path: Path, opset: int = 17) -> Path:
    """Trace the classifier to ONNX with dynamic batch and sequence axes."""
    import torch

    model.eval()
    dummy = tuple(torch.ones((2, 16), dtype=torch.long) for _ in INPUT_NAMES)
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUT_NAMES}
    axes["logits"] = {0: "batch"}
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.inference_mode():
        torch.onnx.export(
            model,
            dummy,
            str(path),
            input_names=INPUT_NAMES,
            output_names=["logits"],
            dynamic_axes=axes,
            opset_version=opset,
            dynamo=False,
            do_constant_folding=True,
        )
    return path


def quantize_embeddings_per_row(path: Path, name_hint: str = "word_embeddings") -> int:
    """Rewrite the embedding Gather to read int8 rows and multiply by per-row scales."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    inits = {init.name: init for init in graph.initializer}
    rewritten = 0
    for index, node in enumerate(list(graph.node)):
        if node.op_type != "Gather" or name_hint not in node.name or node.input[0] not in inits:
            continue
        table = numpy_helper.to_array(inits[node.input[0]]).astype(np.float32)
        scale = np.abs(table).max(axis=1) / 127.0
        scale[scale == 0] = 1.0
        q = np.clip(np.round(table / scale[:, None]), -127, 127).astype(np.int8)
        base, ids, out = node.input[0], node.input[1], node.output[0]
        graph.initializer.remove(inits[base])
        graph.initializer.extend(
            [
                numpy_helper.from_array(q, f"{base}_int8"),
                numpy_helper.from_array(scale.astype(np.float32), f"{base}_row_scale"),
                numpy_helper.from_array(np.array([-1], dtype=np.int64), f"{base}_axes"),
            ]
        )
        new_nodes = [
            helper.make_node("Gather", [f"{base}_int8", ids], [f"{out}_int8"]),
            helper.make_node("Cast", [f"{out}_int8"], [f"{out}_float"], to=TensorProto.FLOAT),
            helper.make_node("Gather", [f"{base}_row_scale", ids], [f"{out}_scale"]),
            helper.make_node("Unsqueeze", [f"{out}_scale", f"{base}_axes"], [f"{out}_scale3"]),
            helper.make_node("Mul", [f"{out}_float", f"{out}_scale3"], [out]),
        ]
        graph.node.remove(node)
        for offset, new in enumerate(new_nodes):
            graph.node.insert(index + offset, new)
        rewritten += 1
    onnx.save(model, str(path))
    return rewritten


QUANTIZATION_SCHEMES = ("channelwise", "rowwise", "static", "dynamic", "blockwise")
BLOCK_SIZE = 32  # blockwise: weights and each row's activations in blocks of 32 along K
# Static scales: activation ranges cut at this percentile of their histogram (MinMax let a
# few outliers stretch the ranges and cost 2 points of macro-F1; RESULTS.md's git history).
CALIBRATION_PERCENTILE = 99.99
CALIBRATION_ROWS = 256
CALIBRATION_BATCH = 8
CALIBRATION_LENGTH = 48  # the histogram collector needs one shape; most messages fit


def calibration_feeds(
    tokenizer_dir: Path, rows: Sequence[dict[str, Any]], emoji_style: str = EMOJI_AS_UNK
) -> list[dict]:
    """Model inputs for static calibration: batches of training rows padded to one length."""
    from intent.encoding import encode, load_tokenizer

    tokenizer = load_tokenizer(tokenizer_dir, CALIBRATION_LENGTH)
    step = max(1, len(rows) // CALIBRATION_ROWS)
    chosen = list(rows)[::step][:CALIBRATION_ROWS]
    feeds = []
    for start in range(0, len(chosen), CALIBRATION_BATCH):
        batch = chosen[start : start + CALIBRATION_BATCH]
        feed = encode(tokenizer, [r["message"] for r in batch],
                      [r.get("conversation_history") for r in batch],
                      emoji_style=emoji_style)  # fmt: skip
        width = feed["input_ids"].shape[1]
        feeds.append({k: np.pad(v, ((0, 0), (0, CALIBRATION_LENGTH - width)))
                      for k, v in feed.items()})  # fmt: skip
    return feeds


def calibration_for(
    scheme: str, tokenizer_dir: Path, rows: Sequence[dict[str, Any]], emoji_style: str
) -> list[dict]:
    """The calibration feeds ``scheme`` reads (none for the schemes that need none)."""
    if scheme == "static":
        return calibration_feeds(tokenizer_dir, rows, emoji_style)
    if scheme == "channelwise":
        return channelwise.calibration_feeds(tokenizer_dir, rows, emoji_style)
    return []


def quantize_int8(
    fp32_path: Path,
    int8_path: Path,
    *,
    scheme: str = "channelwise",
    calibration: Iterable[dict[str, np.ndarray]] = (),
) -> Path:
    """Int8 MatMuls (weights per channel; activations by ``scheme``) plus an int8 per-row
    embedding table. ``calibration``: model feeds whose activation ranges set the scales of
    ``channelwise`` and ``static`` (``calibration_for``); the other schemes ignore it."""
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    int8_path.parent.mkdir(parents=True, exist_ok=True)
    if scheme == "dynamic":
        quantize_dynamic(
            str(fp32_path),
            str(int8_path),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )
    elif scheme == "static":
        quantize_static(
            str(fp32_path),
            str(int8_path),
            _FeedReader(calibration),
            # QLinear operators with uint8 activations and int8 weights: ONNX Runtime's fast
            # CPU path (the QDQ form measured 10% slower here).
            quant_format=QuantFormat.QOperator,
            # MatMuls only: LayerNorm, GELU and Softmax stay fp32 (quantizing them costs
            # accuracy and saves little time).
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.Percentile,
            extra_options={"CalibPercentile": CALIBRATION_PERCENTILE, "MatMulConstBOnly": True},
        )
    elif scheme == "blockwise":
        _quantize_blockwise(fp32_path, int8_path)
    elif scheme == "rowwise":
        quantize_rowwise(fp32_path, int8_path)
    elif scheme == "channelwise":
        ranges = channelwise.channel_ranges(fp32_path, calibration)
        channelwise.quantize_channelwise(fp32_path, int8_path, ranges)
    else:
        raise ValueError(f"quantization scheme: one of {', '.join(QUANTIZATION_SCHEMES)}")
    quantize_embeddings_per_row(int8_path)
    return int8_path


def _quantize_blockwise(fp32_path: Path, int8_path: Path) -> None:
    """MatMulNBits: int8 weights in blocks; at run time each row's activations are quantized
    per block of its own (accuracy level 4: int8 compute), so rows never share a scale."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    config = DefaultWeightOnlyQuantConfig(
        block_size=BLOCK_SIZE, is_symmetric=True, accuracy_level=4, bits=8
    )
    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(fp32_path)), bits=8, block_size=BLOCK_SIZE, is_symmetric=True,
        accuracy_level=4, algo_config=config,
    )  # fmt: skip
    quantizer.process()
    quantizer.model.save_model_to_file(str(int8_path), False)


def describe(scheme: str) -> str:
    """What the model card says of a scheme."""
    if scheme == "static":
        return (
            "onnxruntime static int8 (QOperator; uint8 activations, scales from the "
            f"{CALIBRATION_PERCENTILE} percentile on {CALIBRATION_ROWS} training rows; int8 "
            "weights per channel; int8 per-row word embeddings)"
        )
    if scheme == "blockwise":
        return (
            f"onnxruntime MatMulNBits int8 (weights and activations in blocks of {BLOCK_SIZE}, "
            "activations per row at run time; int8 per-row word embeddings)"
        )
    if scheme == "channelwise":
        return (
            "onnxruntime MatMulIntegerToFloat int8 (uint8 activations with fixed scales from "
            "the training messages: one per channel folded into the weights, except the "
            "feed-forward hidden activations, on one shared step with their widest channels on "
            "steps of their own; int8 weights per channel; int8 per-row word embeddings)"
        )
    if scheme == "rowwise":
        return (
            "onnxruntime MatMulInteger int8 (uint8 activations with one scale per token at run "
            "time; int8 weights per channel; int8 per-row word embeddings)"
        )
    return "onnxruntime dynamic int8 (int8 weights per channel; int8 per-row word embeddings)"


class _FeedReader:
    """ONNX Runtime's calibration reader over an iterable of feeds."""

    def __init__(self, feeds: Iterable[dict[str, np.ndarray]]) -> None:
        self._feeds = iter(feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)
