"""Small reads of an ONNX graph and the int8 weight step the exporters share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

WEIGHT_LEVELS = 127.0  # symmetric int8 weights: -127..127, so negating never overflows


def readers(nodes: Sequence[Any], name: str) -> list[Any]:
    """The nodes that take ``name`` as an input."""
    return [node for node in nodes if name in node.input]


def bias_add(
    nodes: Sequence[Any], output: str, initializers: dict[str, Any]
) -> tuple[Any, str] | None:
    """The Add that adds a constant 1-D bias to ``output``, when it is ``output``'s only
    reader: (that Add, the bias's name)."""
    found = readers(nodes, output)
    if len(found) != 1 or found[0].op_type != "Add":
        return None
    other = [name for name in found[0].input if name != output]
    if len(other) == 1 and other[0] in initializers and len(initializers[other[0]].dims) == 1:
        return found[0], other[0]
    return None


def weight_int8(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per output column: (quantized weight, column scales)."""
    scale = np.abs(weight).max(axis=0) / WEIGHT_LEVELS
    scale[scale == 0] = 1.0
    quantized = np.clip(np.round(weight / scale), -WEIGHT_LEVELS, WEIGHT_LEVELS)
    return quantized.astype(np.int8), scale.astype(np.float32)
