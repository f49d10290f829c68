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
    """Set the fill of every attention bias (a ``Where`` whose output is only added to scores
    going into a Softmax) to ``MASK_FILL`` where it is a float32 scalar below -1e30, in place;
    the number of fills changed. Fills feeding anything else are left as they are."""
    graph = model.graph
    fills_of_biases = {name for node in _attention_biases(graph) for name in node.input}
    changed = 0
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] in fills_of_biases:
            for attribute in node.attribute:
                if attribute.name == "value" and _is_fill(attribute.t):
                    attribute.t.CopyFrom(_fill_like(attribute.t))
                    changed += 1
    for initializer in graph.initializer:
        if initializer.name in fills_of_biases and _is_fill(initializer):
            initializer.CopyFrom(_fill_like(initializer))
            changed += 1
    return changed


def _attention_biases(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """``Where`` nodes whose every consumer is an ``Add`` read only by Softmax nodes."""
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def only_softmax(add: onnx.NodeProto) -> bool:
        readers = [reader for output in add.output for reader in consumers.get(output, [])]
        return bool(readers) and all(reader.op_type == "Softmax" for reader in readers)

    biases = []
    for node in graph.node:
        if node.op_type != "Where":
            continue
        readers = consumers.get(node.output[0], [])
        if readers and all(r.op_type == "Add" and only_softmax(r) for r in readers):
            biases.append(node)
    return biases


def _is_fill(tensor: onnx.TensorProto) -> bool:
    if tensor.data_type != TensorProto.FLOAT:
        return False
    value = numpy_helper.to_array(tensor)
    return value.size == 1 and float(value.reshape(())) < _FILL_BELOW


def _fill_like(tensor: onnx.TensorProto) -> onnx.TensorProto:
    shape = numpy_helper.to_array(tensor).shape
    return numpy_helper.from_array(np.full(shape, MASK_FILL, np.float32), tensor.name)
