"""Row-wise int8 quantization: close to fp32, and a row's result depends on that row only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from training.rowwise import quantize_rowwise

from .onnx_toys import (
    WIDTH,
    assert_close_to_fp32,
    assert_row_scores_alone_as_in_a_loud_batch,
    fp32_and_int8_sessions,
    save_two_matmul_model,
)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> tuple[ort.InferenceSession, ...]:
    folder = tmp_path_factory.mktemp("rowwise")
    save_two_matmul_model(folder / "fp32.onnx")
    assert quantize_rowwise(folder / "fp32.onnx", folder / "int8.onnx") == 3
    return fp32_and_int8_sessions(folder)


def test_every_constant_weight_matmul_is_integer_and_a_shared_input_is_quantized_once(
    tmp_path: Path,
) -> None:
    save_two_matmul_model(tmp_path / "fp32.onnx")
    quantize_rowwise(tmp_path / "fp32.onnx", tmp_path / "int8.onnx")
    ops = [node.op_type for node in onnx.load(str(tmp_path / "int8.onnx")).graph.node]
    assert "MatMul" not in ops
    assert ops.count("MatMulInteger") == 3
    assert ops.count("QuantizeLinear") == 2  # x (read by two MatMuls) and relu(x @ Wk)


def test_results_stay_close_to_fp32(sessions: tuple[ort.InferenceSession, ...]) -> None:
    x = np.random.default_rng(1).normal(size=(4, 9, WIDTH)).astype(np.float32)
    assert_close_to_fp32(sessions, x, 0.02)


def test_a_row_scores_the_same_alone_and_beside_rows_of_any_size(
    sessions: tuple[ort.InferenceSession, ...],
) -> None:
    rng = np.random.default_rng(2)
    row = rng.normal(size=(1, 5, WIDTH)).astype(np.float32)
    loud = 1000 * rng.normal(size=(7, 5, WIDTH))
    assert_row_scores_alone_as_in_a_loud_batch(sessions[1], row, loud)


def test_an_all_zero_row_stays_exact(sessions: tuple[ort.InferenceSession, ...]) -> None:
    fp32, int8 = sessions
    zeros = {"x": np.zeros((2, 3, WIDTH), np.float32)}
    assert np.array_equal(int8.run(None, zeros)[0], fp32.run(None, zeros)[0])  # the bias alone
