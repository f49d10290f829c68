"""Exact int8 products on every x86 CPU: unsigned weights where ONNX Runtime's kernel saturates.

ONNX Runtime multiplies uint8 activations by int8 weights with a 16-bit pairwise sum on x86
CPUs without VNNI (AVX2, AVX-512 without VNNI): two products of 255 and 127 add up past
32,767 and are clipped. With VNNI, and for uint8 weights everywhere, the sums are exact. So
on a CPU that clips, int8 weight initializers are served as uint8 with a zero point of 128:
the same products, computed exactly, at the speed of the unsigned kernel.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# Where each operator takes its weight and the weight's zero point.
_WEIGHT_INPUTS = {
    "MatMulInteger": (1, 3),
    "MatMulIntegerToFloat": (1, 5),
    "DynamicQuantizeMatMul": (1, 3),
}
_SHIFT = 128
_PROBE_DEPTH = 64


@functools.cache
def saturates_signed_weights() -> bool:
    """Whether this CPU's uint8 x int8 kernel clips a sum of 255 x 127 products."""
    weights = np.full((_PROBE_DEPTH, 1), 127, np.int8)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
        "saturation_probe",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [1, _PROBE_DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1])],
        [numpy_helper.from_array(weights, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"a": np.full((1, _PROBE_DEPTH), 255, np.uint8)})[0]
    return int(got[0, 0]) != 255 * 127 * _PROBE_DEPTH


def with_unsigned_weights(model: onnx.ModelProto) -> int:
    """Turn every int8 weight initializer of an integer MatMul into uint8 (value + 128, zero
    point + 128), in place; the number of MatMuls changed. Results are unchanged."""
    initializers = {init.name: init for init in model.graph.initializer}
    converted: dict[str, str] = {}
    changed = 0
    for node in model.graph.node:
        positions = _WEIGHT_INPUTS.get(node.op_type)
        if positions is None or node.domain not in ("", "com.microsoft"):
            continue
        weight_at, zero_at = positions
        weight = initializers.get(node.input[weight_at])
        if weight is None or weight.data_type != TensorProto.INT8:
            continue
        zero = _zero_point(node, zero_at, initializers)
        node.input[weight_at] = _unsigned(model, weight, converted, initializers)
        while len(node.input) <= zero_at:
            node.input.append("")
        node.input[zero_at] = _unsigned(model, zero, converted, initializers)
        changed += 1
    return changed


def _zero_point(node: Any, at: int, initializers: dict[str, Any]) -> Any:
    """The node's int8 weight zero point (a made-up scalar 0 when it has none)."""
    name = node.input[at] if len(node.input) > at else ""
    if not name:
        return numpy_helper.from_array(np.zeros((), np.int8), "int8_zero_point")
    zero = initializers.get(name)
    if zero is None or zero.data_type != TensorProto.INT8:
        raise ValueError(f"{node.name or node.op_type}: weight zero point {name!r} is not int8")
    return zero


def _unsigned(
    model: onnx.ModelProto, tensor: Any, converted: dict[str, str], initializers: dict[str, Any]
) -> str:
    """The name of a uint8 copy of an int8 initializer, shifted by 128 (made once)."""
    if tensor.name not in converted:
        values = numpy_helper.to_array(tensor).astype(np.int16) + _SHIFT
        name = f"{tensor.name}_as_uint8"
        shifted = numpy_helper.from_array(values.astype(np.uint8), name)
        model.graph.initializer.append(shifted)
        initializers[name] = shifted
        converted[tensor.name] = name
    return converted[tensor.name]
