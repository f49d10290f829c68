"""Int8 MatMuls with one activation scale per token, computed at run time.

Every MatMul with a constant 2-D weight becomes ``MatMulInteger``: the weight quantized once
per output column, the activations per row (one token's vector) by that row's own absolute
maximum. A token's result then depends on nothing but the token itself, so neither the
other messages of a batch nor padding can move a message's logits, and no calibration set
fixes ranges in advance. An input read by several MatMuls (Q, K and V) is quantized once.

Activations are stored as uint8 around a zero point of 128 (symmetric, 255 levels): uint8
activations times int8 weights is ONNX Runtime's fast integer GEMM on x86; int8 times int8
ran 10x slower here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from training.onnx_graph import weight_int8

EPSILON = 1e-8  # floor of an activation scale, so an all-zero row stays zero
ZERO_POINT = 128


def _quantize_rows(activation: str, width: int) -> list[Any]:
    """Nodes turning ``activation`` [..., width] into uint8 rows ``{p}_q`` [rows, width], their
    scales as a column ``{p}_col`` [rows, 1] and the leading shape ``{p}_lead``."""
    from onnx import helper, numpy_helper

    p = f"{activation}_rowwise"
    return [
        helper.make_node("Constant", [], [f"{p}_2d"],
                         value=numpy_helper.from_array(np.array([-1, width], np.int64))),
        helper.make_node("Reshape", [activation, f"{p}_2d"], [f"{p}_rows"]),
        helper.make_node("Abs", [f"{p}_rows"], [f"{p}_abs"]),
        helper.make_node("ReduceMax", [f"{p}_abs"], [f"{p}_max"], axes=[1], keepdims=0),
        helper.make_node("Max", [f"{p}_max", "rowwise_epsilon"], [f"{p}_max_floor"]),
        helper.make_node("Mul", [f"{p}_max_floor", "rowwise_inv127"], [f"{p}_scale"]),
        helper.make_node("Shape", [f"{p}_scale"], [f"{p}_rows_count"]),
        helper.make_node("ConstantOfShape", [f"{p}_rows_count"], [f"{p}_zero_points"],
                         value=numpy_helper.from_array(np.array([ZERO_POINT], np.uint8))),
        helper.make_node("QuantizeLinear", [f"{p}_rows", f"{p}_scale", f"{p}_zero_points"],
                         [f"{p}_q"], axis=0),
        helper.make_node("Unsqueeze", [f"{p}_scale", "rowwise_axis1"], [f"{p}_col"]),
        helper.make_node("Shape", [activation], [f"{p}_shape"]),
        helper.make_node("Slice", [f"{p}_shape", "rowwise_start", "rowwise_last"], [f"{p}_lead"]),
    ]  # fmt: skip


def quantize_rowwise(fp32_path: Path, int8_path: Path) -> int:
    """Write ``fp32_path`` with its constant-weight MatMuls made int8 to ``int8_path``;
    returns how many MatMuls were rewritten."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(fp32_path))
    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    constants = [
        numpy_helper.from_array(np.array(EPSILON, np.float32), "rowwise_epsilon"),
        numpy_helper.from_array(np.array(1 / 127, np.float32), "rowwise_inv127"),
        numpy_helper.from_array(np.array(ZERO_POINT, np.uint8), "rowwise_zero_point"),
        numpy_helper.from_array(np.array([1], np.int64), "rowwise_axis1"),
        numpy_helper.from_array(np.array([0], np.int64), "rowwise_start"),
        numpy_helper.from_array(np.array([-1], np.int64), "rowwise_last"),
    ]
    quantized: set[str] = set()
    rewritten = 0
    nodes: list[Any] = []
    for node in graph.node:
        weight = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if weight is None or len(weight.dims) != 2:
            nodes.append(node)
            continue
        w_q, w_scale = weight_int8(numpy_helper.to_array(weight).astype(np.float32))
        width, columns = w_q.shape
        activation, out, base = node.input[0], node.output[0], weight.name
        p = f"{activation}_rowwise"
        if activation not in quantized:
            nodes += _quantize_rows(activation, width)
            quantized.add(activation)
        rewritten += 1
        constants += [
            numpy_helper.from_array(w_q, f"{base}_int8"),
            numpy_helper.from_array(w_scale, f"{base}_column_scale"),
            numpy_helper.from_array(np.array([columns], np.int64), f"{base}_columns"),
        ]
        nodes += [
            helper.make_node("MatMulInteger", [f"{p}_q", f"{base}_int8", "rowwise_zero_point"],
                             [f"{out}_int32"]),
            helper.make_node("Cast", [f"{out}_int32"], [f"{out}_float"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{out}_float", f"{base}_column_scale"], [f"{out}_by_column"]),
            helper.make_node("Mul", [f"{out}_by_column", f"{p}_col"], [f"{out}_rows"]),
            helper.make_node("Concat", [f"{p}_lead", f"{base}_columns"], [f"{out}_shape"], axis=0),
            helper.make_node("Reshape", [f"{out}_rows", f"{out}_shape"], [out]),
        ]  # fmt: skip
    read = {name for node in nodes for name in node.input}
    kept = [init for init in graph.initializer if init.name in read]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + constants)
    onnx.checker.check_model(model)
    onnx.save(model, str(int8_path))
    return rewritten
