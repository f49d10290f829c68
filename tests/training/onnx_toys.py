"""Small ONNX graphs for the quantizer tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WIDTH, HIDDEN = 16, 24


def save_graph(
    path: Path, nodes: list, constants: dict[str, np.ndarray], width_in: int, width_out: int
) -> None:
    """A graph from ``x`` [batch, tokens, width_in] to ``y`` [batch, tokens, width_out]."""
    graph = helper.make_graph(
        nodes,
        path.stem,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", width_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "tokens", width_out])],
        [numpy_helper.from_array(value, name) for name, value in constants.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))


def save_two_matmul_model(path: Path) -> None:
    """x [batch, tokens, 16] -> (x @ Wq + bq) + relu(x @ Wk) @ Wo: two MatMuls share x, one
    has a bias."""
    rng = np.random.default_rng(7)
    weights = {
        "Wq": rng.normal(size=(WIDTH, HIDDEN)).astype(np.float32),
        "bq": rng.normal(size=HIDDEN).astype(np.float32),
        "Wk": rng.normal(size=(WIDTH, WIDTH)).astype(np.float32),
        "Wo": rng.normal(size=(WIDTH, HIDDEN)).astype(np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "Wq"], ["q_raw"]),
        helper.make_node("Add", ["bq", "q_raw"], ["q"]),
        helper.make_node("MatMul", ["x", "Wk"], ["k"]),
        helper.make_node("Relu", ["k"], ["k_relu"]),
        helper.make_node("MatMul", ["k_relu", "Wo"], ["o"]),
        helper.make_node("Add", ["q", "o"], ["y"]),
    ]
    save_graph(path, nodes, weights, WIDTH, HIDDEN)


def assert_row_scores_alone_as_in_a_loud_batch(
    session: Any, row: np.ndarray, loud: np.ndarray
) -> None:
    """``row`` [1, tokens, width] gives the same output alone and inside ``loud`` rows."""
    alone = session.run(None, {"x": row})[0]
    batch = np.concatenate([loud[:3], row, loud[3:]]).astype(np.float32)
    assert np.array_equal(alone, session.run(None, {"x": batch})[0][3:4])


def fp32_and_int8_sessions(folder: Path) -> tuple[Any, Any]:
    """ONNX Runtime sessions of ``folder/fp32.onnx`` and ``folder/int8.onnx``, the int8 one
    loaded as the runner loads a model (exact integer products on every CPU)."""
    import onnxruntime as ort

    from intent.session_source import session_source

    fp32, int8 = (
        ort.InferenceSession(session_source(str(folder / name)), providers=["CPUExecutionProvider"])
        for name in ("fp32.onnx", "int8.onnx")
    )
    return fp32, int8


def assert_close_to_fp32(sessions: tuple[Any, Any], x: np.ndarray, tolerance: float) -> None:
    """The int8 graph's output for ``x`` is within ``tolerance`` of the fp32 output's peak."""
    fp32, int8 = sessions
    expected, got = fp32.run(None, {"x": x})[0], int8.run(None, {"x": x})[0]
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() <= tolerance * np.abs(expected).max()


def save_feed_forward_model(path: Path, hidden: int, loud_channels: tuple[int, ...] = ()) -> None:
    """x [batch, tokens, 16] -> gelu(x @ W1 + b1) @ W2 + b2, GELU written out as the encoder
    exports it (x * (erf(x / sqrt 2) + 1) * 0.5); ``loud_channels`` of the hidden layer range
    twenty times wider than the rest."""
    rng = np.random.default_rng(5)
    first = rng.normal(size=(WIDTH, hidden)).astype(np.float32) / 4
    first[:, list(loud_channels)] *= 20
    constants: dict[str, np.ndarray] = {
        "W1": first,
        "b1": rng.normal(size=hidden).astype(np.float32),
        "W2": rng.normal(size=(hidden, WIDTH)).astype(np.float32) / 8,
        "b2": rng.normal(size=WIDTH).astype(np.float32),
        "root_two": np.array(np.sqrt(2), np.float32),
        "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h_raw"]),
        helper.make_node("Add", ["h_raw", "b1"], ["h"]),
        helper.make_node("Div", ["h", "root_two"], ["h_scaled"]),
        helper.make_node("Erf", ["h_scaled"], ["h_erf"]),
        helper.make_node("Add", ["h_erf", "one"], ["h_erf_one"]),
        helper.make_node("Mul", ["h", "h_erf_one"], ["h_product"]),
        helper.make_node("Mul", ["h_product", "half"], ["gelu"]),
        helper.make_node("MatMul", ["gelu", "W2"], ["y_raw"]),
        helper.make_node("Add", ["y_raw", "b2"], ["y"]),
    ]
    save_graph(path, nodes, constants, WIDTH, WIDTH)
