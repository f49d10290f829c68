"""Row-wise int8 quantization: close to fp32, and a row's result depends on that row only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from training.rowwise import quantize_rowwise

WIDTH, HIDDEN = 16, 24


def _toy_model(path: Path) -> None:
    """x [batch, tokens, 16] -> (x @ Wq) + relu(x @ Wk) @ Wo: two MatMuls share x."""
    rng = np.random.default_rng(7)
    weights = {
        "Wq": rng.normal(size=(WIDTH, HIDDEN)).astype(np.float32),
        "Wk": rng.normal(size=(WIDTH, WIDTH)).astype(np.float32),
        "Wo": rng.normal(size=(WIDTH, HIDDEN)).astype(np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "Wq"], ["q"]),
        helper.make_node("MatMul", ["x", "Wk"], ["k"]),
        helper.make_node("Relu", ["k"], ["k_relu"]),
        helper.make_node("MatMul", ["k_relu", "Wo"], ["o"]),
        helper.make_node("Add", ["q", "o"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "toy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "tokens", HIDDEN])],
        [numpy_helper.from_array(value, name) for name, value in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> tuple[ort.InferenceSession, ...]:
    folder = tmp_path_factory.mktemp("rowwise")
    _toy_model(folder / "fp32.onnx")
    assert quantize_rowwise(folder / "fp32.onnx", folder / "int8.onnx") == 3
    return tuple(
        ort.InferenceSession(str(folder / name), providers=["CPUExecutionProvider"])
        for name in ("fp32.onnx", "int8.onnx")
    )


def test_every_constant_weight_matmul_is_integer_and_a_shared_input_is_quantized_once(
    tmp_path: Path,
) -> None:
    _toy_model(tmp_path / "fp32.onnx")
    quantize_rowwise(tmp_path / "fp32.onnx", tmp_path / "int8.onnx")
    ops = [node.op_type for node in onnx.load(str(tmp_path / "int8.onnx")).graph.node]
    assert "MatMul" not in ops
    assert ops.count("MatMulInteger") == 3
    assert ops.count("QuantizeLinear") == 2  # x (read by two MatMuls) and relu(x @ Wk)


def test_results_stay_close_to_fp32(sessions: tuple[ort.InferenceSession, ...]) -> None:
    fp32, int8 = sessions
    x = np.random.default_rng(1).normal(size=(4, 9, WIDTH)).astype(np.float32)
    expected, got = fp32.run(None, {"x": x})[0], int8.run(None, {"x": x})[0]
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() <= 0.02 * np.abs(expected).max()


def test_a_row_scores_the_same_alone_and_beside_rows_of_any_size(
    sessions: tuple[ort.InferenceSession, ...],
) -> None:
    _, int8 = sessions
    rng = np.random.default_rng(2)
    row = rng.normal(size=(1, 5, WIDTH)).astype(np.float32)
    loud = 1000 * rng.normal(size=(7, 5, WIDTH)).astype(np.float32)
    alone = int8.run(None, {"x": row})[0]
    in_batch = int8.run(None, {"x": np.concatenate([loud[:3], row, loud[3:]])})[0][3:4]
    assert np.array_equal(alone, in_batch)


def test_an_all_zero_row_stays_zero(sessions: tuple[ort.InferenceSession, ...]) -> None:
    _, int8 = sessions
    assert not np.any(int8.run(None, {"x": np.zeros((2, 3, WIDTH), np.float32)})[0])
