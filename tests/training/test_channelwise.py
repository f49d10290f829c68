"""Channel-wise int8 quantization: fixed scales per channel, close to fp32 even with an outlier
channel, and a row's result depends on that row only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from training import channelwise
from training.channelwise import channel_ranges, quantize_channelwise

from .onnx_toys import (
    WIDTH,
    assert_close_to_fp32,
    assert_row_scores_alone_as_in_a_loud_batch,
    fp32_and_int8_sessions,
    save_feed_forward_model,
    save_graph,
    save_two_matmul_model,
)

OUTLIER = 3  # one input channel a hundred times louder than the rest, as in LayerNorm outputs


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
    save_two_matmul_model(folder / "fp32.onnx")
    ranges = channel_ranges(folder / "fp32.onnx", _feeds())
    assert quantize_channelwise(folder / "fp32.onnx", folder / "int8.onnx", ranges) == 3
    return folder


@pytest.fixture(scope="module")
def sessions(folder: Path) -> tuple[ort.InferenceSession, ...]:
    return fp32_and_int8_sessions(folder)


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
    x = _activations(np.random.default_rng(1), 4, 9) * 0.9  # inside the calibrated ranges
    assert_close_to_fp32(sessions, x, 0.02)


def test_a_row_scores_the_same_alone_and_beside_rows_of_any_size(
    sessions: tuple[ort.InferenceSession, ...],
) -> None:
    rng = np.random.default_rng(2)
    row = _activations(rng, 1, 5)
    assert_row_scores_alone_as_in_a_loud_batch(sessions[1], row, 1000 * _activations(rng, 7, 5))


def test_a_matmul_input_without_a_range_is_refused(folder: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no calibration range"):
        quantize_channelwise(
            folder / "fp32.onnx", tmp_path / "int8.onnx", {"x": np.ones((3, WIDTH))}
        )


def _toy_attention(path: Path) -> None:
    """LayerNorm, then one attention block of two heads as the encoder exports it:
    ctx = softmax((q * f) (k * f)^T) v with f = head_size ** -0.25 computed from the shapes at
    run time, then ctx @ Wo."""
    rng = np.random.default_rng(11)
    width, heads = 8, 2
    constants: dict[str, np.ndarray] = {
        "gamma": rng.uniform(0.5, 3, width).astype(np.float32),
        "beta": rng.normal(0, 2, width).astype(np.float32),  # channels off centre, as in BERT
        "Wq": rng.normal(size=(width, width)).astype(np.float32),
        "Wk": rng.normal(size=(width, width)).astype(np.float32),
        "bk": rng.normal(size=width).astype(np.float32),
        "Wv": rng.normal(size=(width, width)).astype(np.float32),
        "bv": rng.normal(size=width).astype(np.float32),
        "Wo": rng.normal(size=(width, width)).astype(np.float32),
        "heads_shape": np.array([0, 0, heads, width // heads], np.int64),
        "flat_shape": np.array([0, 0, width], np.int64),
        "last": np.array([-1], np.int64),
        "end": np.array([2**62], np.int64),
    }
    nodes = [
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], axis=-1),
        helper.make_node("MatMul", ["ln", "Wq"], ["q"]),
        helper.make_node("Reshape", ["q", "heads_shape"], ["q4"]),
        helper.make_node("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
        helper.make_node("Shape", ["qh"], ["qh_shape"]),
        helper.make_node("Slice", ["qh_shape", "last", "end"], ["head_size"]),
        helper.make_node("Cast", ["head_size"], ["head_size_float"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Sqrt", ["head_size_float"], ["root"]),
        helper.make_node("Reciprocal", ["root"], ["inverse_root"]),
        helper.make_node("Sqrt", ["inverse_root"], ["factor"]),
        helper.make_node("Mul", ["qh", "factor"], ["q_scaled"]),
        helper.make_node("MatMul", ["ln", "Wk"], ["k_raw"]),
        helper.make_node("Add", ["k_raw", "bk"], ["k"]),
        helper.make_node("Reshape", ["k", "heads_shape"], ["k4"]),
        helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Mul", ["kt", "factor"], ["k_scaled"]),
        helper.make_node("MatMul", ["q_scaled", "k_scaled"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["ln", "Wv"], ["v_raw"]),
        helper.make_node("Add", ["bv", "v_raw"], ["v"]),
        helper.make_node("Reshape", ["v", "heads_shape"], ["v4"]),
        helper.make_node("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["probs", "vh"], ["ctx_heads"]),
        helper.make_node("Transpose", ["ctx_heads"], ["ctx4"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx4", "flat_shape"], ["ctx"]),
        helper.make_node("MatMul", ["ctx", "Wo"], ["y"]),
    ]
    save_graph(path, nodes, constants, width, width)


def test_layernorm_centring_context_fold_and_head_factor_keep_attention_close_to_fp32(
    tmp_path: Path,
) -> None:
    _toy_attention(tmp_path / "fp32.onnx")
    rng = np.random.default_rng(3)
    feeds: list[dict[str, np.ndarray]] = [
        {"x": rng.normal(size=(4, 6, 8)).astype(np.float32), "attention_mask": np.ones((4, 6))}
        for _ in range(16)
    ]
    ranges = channel_ranges(tmp_path / "fp32.onnx", feeds)
    assert quantize_channelwise(tmp_path / "fp32.onnx", tmp_path / "int8.onnx", ranges) == 4
    ops = [node.op_type for node in onnx.load(str(tmp_path / "int8.onnx")).graph.node]
    # ln: one BatchNormalization (its steps and centres), QuantizeLinear; ctx: QuantizeLinear
    # alone, its step and centre produced by the value projection; the heads' factor lives in
    # the query and key weights. No Mul or Add over a tensor is left.
    assert (ops.count("Mul"), ops.count("Add"), ops.count("QuantizeLinear")) == (0, 0, 2)
    assert ops.count("BatchNormalization") == 1

    x = rng.normal(size=(3, 6, 8)).astype(np.float32)
    assert_close_to_fp32(fp32_and_int8_sessions(tmp_path), x, 0.03)


def test_a_wide_hidden_layer_shares_one_step_and_its_loudest_channels_get_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hidden, loud = 96, (5, 40, 77)
    save_feed_forward_model(tmp_path / "fp32.onnx", hidden, loud)
    rng = np.random.default_rng(4)
    feeds: list[dict[str, np.ndarray]] = [
        {"x": rng.normal(size=(4, 6, WIDTH)).astype(np.float32), "attention_mask": np.ones((4, 6))}
        for _ in range(16)
    ]
    ranges = channel_ranges(tmp_path / "fp32.onnx", feeds)
    high = ranges["gelu"][1]
    assert set(np.argsort(high)[-len(loud) :]) == set(loud)
    assert quantize_channelwise(tmp_path / "fp32.onnx", tmp_path / "int8.onnx", ranges) == 2
    nodes = onnx.load(str(tmp_path / "int8.onnx")).graph.node
    # The hidden layer: QuantizeLinear with its own step, and the widest channels sliced out,
    # scaled and quantized apart. No Mul reads the whole hidden layer.
    readers = sorted(node.op_type for node in nodes if "gelu" in node.input)
    assert readers == ["QuantizeLinear", "Slice"]
    assert [node.op_type for node in nodes].count("Concat") == 1

    x = rng.normal(size=(3, 6, WIDTH)).astype(np.float32) * 0.9
    sessions = fp32_and_int8_sessions(tmp_path)
    assert_row_scores_alone_as_in_a_loud_batch(sessions[1], x[:1], 1000 * x)

    def error(wide_channels: int) -> float:
        monkeypatch.setattr(channelwise, "WIDE_CHANNELS", wide_channels)
        quantize_channelwise(tmp_path / "fp32.onnx", tmp_path / "int8.onnx", ranges)
        fp32, int8 = fp32_and_int8_sessions(tmp_path)
        return float(np.abs(int8.run(None, {"x": x})[0] - fp32.run(None, {"x": x})[0]).mean())

    shared = error(channelwise.WIDE_CHANNELS)
    assert shared <= 1.1 * error(hidden)  # as good as a step for every channel (and a Mul)
    assert error(1) > 1.3 * shared  # two loud channels left on the shared step: clipped
