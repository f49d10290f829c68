"""Feed-forward blocks (MatMul, bias, an elementwise activation, MatMul) and reordering their
hidden channels.

The channelwise quantizer gives the widest channels of a GELU output steps of their own; with
those channels last, a Slice (not a Gather) picks them out. Reordering the first MatMul's
columns, its bias and the second MatMul's rows the same way changes no result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from training.onnx_graph import bias_add, readers

# Operators an activation between the two MatMuls may use: they act on each channel alone.
ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Erf", "Tanh", "Sigmoid", "Sqrt", "Pow"})


def _scalar_constant(name: str, initializers: dict[str, Any], producers: dict[str, Any]) -> bool:
    from onnx import numpy_helper

    if name in initializers:
        return int(np.prod(initializers[name].dims)) == 1
    node = producers.get(name)
    if node is None or node.op_type != "Constant":
        return False
    return np.size(numpy_helper.to_array(node.attribute[0].t)) == 1


def _first_matmul(
    node: Any, nodes: Sequence[Any], producers: dict[str, Any], initializers: dict[str, Any]
) -> Any | None:
    """The constant-weight MatMul whose bias ``node`` adds, if it is one."""
    for name in node.input if node.op_type == "Add" else []:
        matmul = producers.get(name)
        if matmul is None or matmul.op_type != "MatMul" or matmul.input[1] not in initializers:
            continue
        bias = bias_add(nodes, matmul.output[0], initializers)
        if bias is not None and bias[0] is node:
            return matmul
    return None


def _feed_forward(
    nodes: Sequence[Any], second: Any, initializers: dict[str, Any], producers: dict[str, Any]
) -> dict[str, Any] | None:
    """The block ending in ``second`` (a constant-weight MatMul), when it reads an elementwise
    activation of a first constant-weight MatMul plus bias: its parts, or None."""
    activation: dict[int, Any] = {}
    hidden = first = None
    pending = [second.input[0]]
    while pending:
        node = producers.get(pending.pop())
        if node is None:
            return None
        matmul = _first_matmul(node, nodes, producers, initializers)
        if matmul is not None:
            if hidden is not None and hidden is not node:
                return None  # two first MatMuls: not a feed-forward block
            hidden, first = node, matmul
        elif node.op_type in ELEMENTWISE:
            activation[id(node)] = node
            pending += [n for n in node.input if not _scalar_constant(n, initializers, producers)]
        else:
            return None
    if hidden is None or first is None or not activation:
        return None
    produced = {out for node in activation.values() for out in node.output} | {hidden.output[0]}
    for node in nodes:
        if id(node) not in activation and node is not second and produced & set(node.input):
            return None  # something outside the block reads one of its tensors
    return {
        "first": first,
        "hidden_bias": hidden,
        # The Add's other input: _first_matmul found it to be a constant 1-D bias.
        "first_bias": next(name for name in hidden.input if name != first.output[0]),
        "activation": [node for node in nodes if id(node) in activation],  # graph order
    }


def hidden_activations(model: Any) -> dict[str, dict[str, Any]]:
    """``{hidden activation: its block}`` for every feed-forward block of ``model``, keyed by
    the tensor the second MatMul reads."""
    nodes = list(model.graph.node)
    producers = {output: node for node in nodes for output in node.output}
    initializers = {init.name: init for init in model.graph.initializer}
    blocks = {}
    for second in nodes:
        if second.op_type != "MatMul" or second.input[1] not in initializers:
            continue
        block = _feed_forward(nodes, second, initializers, producers)
        if block is not None and len(readers(nodes, second.input[0])) == 1:
            blocks[second.input[0]] = block | {"second": second}
    return blocks


def reorder_hidden(model: Any, block: dict[str, Any], order: np.ndarray) -> None:
    """Put ``block``'s hidden channels in ``order`` (in place): the first MatMul's columns, its
    bias and the second MatMul's rows."""
    from onnx import numpy_helper

    initializers = {init.name: init for init in model.graph.initializer}
    for name, reorder in (
        (block["first"].input[1], lambda a: a[:, order]),
        (block["first_bias"], lambda a: a[order]),
        (block["second"].input[1], lambda a: a[order]),
    ):
        init = initializers[name]
        init.CopyFrom(numpy_helper.from_array(reorder(numpy_helper.to_array(init)), name))
