"""Channel-wise int8 quantization: fixed scales per channel, close to fp32 even with an outlier
channel, and a row's result depends on that row only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from training.channelwise import channel_ranges, quantize_channelwise

WIDTH, HIDDEN = 16, 24
OUTLIER = 3  # one input channel a hundred times louder than the rest, as in LayerNorm outputs


def _toy_model(path: Path) -> None:
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
    graph = helper.make_graph(
        nodes,
        "toy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "tokens", HIDDEN])],
        [numpy_helper.from_array(value, name) for name, value in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))


def _activations(rng: np.random.Generator, batch: int, tokens: int) -> np.ndarray:
    x = rng.normal(size=(batch, tokens, WIDTH)).astype(np.float32)
    x[..., OUTLIER] *= 100
    return x


def _feeds(seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(8):
        x = _activations(rng, 4, 6)
        mask = np.ones((4, 6), np.int64)
        mask[:, 4:] = 0  # padding: huge values there must not widen any range
        x[:, 4:] = 1e6
        feeds.append({"x": x, "attention_mask": mask})
    return feeds


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("channelwise")
    _toy_model(folder / "fp32.onnx")
    ranges = channel_ranges(folder / "fp32.onnx", _feeds())
    assert quantize_channelwise(folder / "fp32.onnx", folder / "int8.onnx", ranges) == 3
    return folder


@pytest.fixture(scope="module")
def sessions(folder: Path) -> tuple[ort.InferenceSession, ...]:
    return tuple(
        ort.InferenceSession(str(folder / name), providers=["CPUExecutionProvider"])
        for name in ("fp32.onnx", "int8.onnx")
    )


def test_matmuls_become_integer_with_their_bias_and_a_shared_input_is_quantized_once(
    folder: Path,
) -> None:
    ops = [node.op_type for node in onnx.load(str(folder / "int8.onnx")).graph.node]
    assert "MatMul" not in ops
    assert ops.count("MatMulIntegerToFloat") == 3
    assert ops.count("QuantizeLinear") == 2  # x (read by two MatMuls) and relu(x @ Wk)
    model = onnx.load(str(folder / "int8.onnx"))
    assert not any("bq" in node.input for node in model.graph.node)  # fused into its MatMul


def test_padding_does_not_widen_the_ranges(folder: Path) -> None:
    ranges = channel_ranges(folder / "fp32.onnx", _feeds())
    low, high, mean = ranges["x"]
    assert low.shape == high.shape == mean.shape == (WIDTH,)
    assert np.all(low < mean) and np.all(mean < high)
    assert high.max() < 1e4  # real tokens only: the 1e6 padding was left out
    assert np.all(low < 0) and np.all(high > 0)
    assert high[OUTLIER] > 50 * np.delete(high, OUTLIER).max()


def test_results_stay_close_to_fp32_beside_an_outlier_channel(
    sessions: tuple[ort.InferenceSession, ...],
) -> None:
    fp32, int8 = sessions
    x = _activations(np.random.default_rng(1), 4, 9) * 0.9  # inside the calibrated ranges
    expected, got = fp32.run(None, {"x": x})[0], int8.run(None, {"x": x})[0]
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() <= 0.02 * np.abs(expected).max()


def test_a_row_scores_the_same_alone_and_beside_rows_of_any_size(
    sessions: tuple[ort.InferenceSession, ...],
) -> None:
    _, int8 = sessions
    rng = np.random.default_rng(2)
    row = _activations(rng, 1, 5)
    loud = 1000 * _activations(rng, 7, 5)
    alone = int8.run(None, {"x": row})[0]
    in_batch = int8.run(None, {"x": np.concatenate([loud[:3], row, loud[3:]])})[0][3:4]
    assert np.array_equal(alone, in_batch)


def test_a_matmul_input_without_a_range_is_refused(folder: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no calibration range"):
        quantize_channelwise(
            folder / "fp32.onnx", tmp_path / "int8.onnx", {"x": np.ones((3, WIDTH))}
        )
