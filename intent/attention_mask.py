"""A fill value for masked attention scores that ONNX Runtime's Softmax handles at full speed.

The exported encoders fill the scores of padding positions with float32's lowest value before
the Softmax. ONNX Runtime's CPU Softmax takes a slow path for a row whose entries sit that far
below its maximum: a row with one such entry costs about five times as much (a [9, 12, 20, 20]
Softmax, one thread: 42 us without padding, 218 us with one padded position in 20, 366 us with
five; benchmarks/RESULTS.md). ``MASK_FILL`` keeps padded entries in the range Softmax computes
quickly while their weight (e^-30, ~1e-13 of the row's largest) stays below float32's
resolution of the row's sum, so the model's outputs do not change.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

MASK_FILL = -30.0
# Exports fill with torch.finfo(torch.float32).min; anything this low is such a fill.
_FILL_BELOW = -1e30


def with_fast_mask_fill(model: onnx.ModelProto) -> int:
    """Set every scalar float32 fill of a ``Where`` below -1e30 to ``MASK_FILL``, in place;
    the number of fills changed."""
    graph = model.graph
    feeds_where = {name for node in graph.node if node.op_type == "Where" for name in node.input}
    changed = 0
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] in feeds_where:
            for attribute in node.attribute:
                if attribute.name == "value" and _is_fill(attribute.t):
                    attribute.t.CopyFrom(_fill_like(attribute.t))
                    changed += 1
    for initializer in graph.initializer:
        if initializer.name in feeds_where and _is_fill(initializer):
            initializer.CopyFrom(_fill_like(initializer))
            changed += 1
    return changed


def _is_fill(tensor: onnx.TensorProto) -> bool:
    if tensor.data_type != TensorProto.FLOAT:
        return False
    value = numpy_helper.to_array(tensor)
    return value.size == 1 and float(value.reshape(())) < _FILL_BELOW


def _fill_like(tensor: onnx.TensorProto) -> onnx.TensorProto:
    shape = numpy_helper.to_array(tensor).shape
    return numpy_helper.from_array(np.full(shape, MASK_FILL, np.float32), tensor.name)
