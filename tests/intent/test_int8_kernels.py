"""Integer MatMuls give exact products on every CPU: int8 weights served as uint8 where the
signed kernel clips (x86 without VNNI), with the same results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from intent import int8_kernels
from intent.int8_kernels import with_unsigned_weights
from intent.session_source import session_source

ROWS, DEPTH, COLUMNS = 5, 48, 6


def _model(nodes: list, inputs: list, outputs: list, constants: dict) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "toy",
        inputs,
        outputs,
        [numpy_helper.from_array(value, name) for name, value in constants.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _loud_operands() -> tuple[np.ndarray, np.ndarray]:
    """Activations and weights at the ends of their ranges: where a 16-bit pairwise sum of
    255 x 127 products clips."""
    rng = np.random.default_rng(3)
    activations = rng.integers(200, 256, size=(ROWS, DEPTH)).astype(np.uint8)
    activations[0] = 255
    weights = rng.choice([-1, 1], size=(DEPTH, COLUMNS)) * rng.integers(100, 128, (DEPTH, COLUMNS))
    weights[:, 0] = 127
    return activations, weights.astype(np.int8)


def test_matmul_integer_gives_the_exact_products_with_its_zero_points_kept() -> None:
    activations, weights = _loud_operands()
    zero_points = np.array([0, 3, -5, 0, 7, -1], np.int8)
    model = _model(
        [helper.make_node("MatMulInteger", ["a", "w", "", "w_zero"], ["y"])],
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [ROWS, DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [ROWS, COLUMNS])],
        {"w": weights, "w_zero": zero_points},
    )
    assert with_unsigned_weights(model) == 1
    expected = activations.astype(np.int64) @ (weights.astype(np.int64) - zero_points)
    np.testing.assert_array_equal(_run(model, {"a": activations}), expected)


def test_matmul_integer_to_float_keeps_its_scales_and_bias() -> None:
    activations, weights = _loud_operands()
    rng = np.random.default_rng(4)
    weight_scales = rng.uniform(0.001, 0.01, COLUMNS).astype(np.float32)
    bias = rng.normal(size=COLUMNS).astype(np.float32)
    constants = {
        "w": weights,
        "a_scale": np.array(0.02, np.float32),
        "w_scale": weight_scales,
        "a_zero": np.array(128, np.uint8),
        "bias": bias,
    }
    node = helper.make_node(
        "MatMulIntegerToFloat",
        ["a", "w", "a_scale", "w_scale", "a_zero", "", "bias"],
        ["y"],
        domain="com.microsoft",
    )
    model = _model(
        [node],
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [ROWS, DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, COLUMNS])],
        constants,
    )
    assert with_unsigned_weights(model) == 1
    exact = (activations.astype(np.int64) - 128) @ weights.astype(np.int64)
    expected = exact * 0.02 * weight_scales + bias
    np.testing.assert_allclose(_run(model, {"a": activations}), expected, rtol=1e-5, atol=1e-4)


def test_a_weight_two_matmuls_share_is_converted_once_and_float_weights_stay() -> None:
    _, weights = _loud_operands()
    model = _model(
        [
            helper.make_node("MatMulInteger", ["a", "w"], ["y1"]),
            helper.make_node("MatMulInteger", ["a", "w"], ["y2"]),
            helper.make_node("Cast", ["a"], ["a_float"], to=TensorProto.FLOAT),
            helper.make_node("MatMul", ["a_float", "w_float"], ["y3"]),
        ],
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [ROWS, DEPTH])],
        [
            helper.make_tensor_value_info(name, kind, [ROWS, COLUMNS])
            for name, kind in (
                ("y1", TensorProto.INT32),
                ("y2", TensorProto.INT32),
                ("y3", TensorProto.FLOAT),
            )
        ],  # fmt: skip
        {"w": weights, "w_float": weights.astype(np.float32)},
    )
    assert with_unsigned_weights(model) == 2
    first, second, _, matmul = model.graph.node
    assert first.input[1] == second.input[1] == "w_as_uint8"
    assert first.input[3] == second.input[3]  # one shared zero point of 128
    assert matmul.input[1] == "w_float"
    assert [init.name for init in model.graph.initializer].count("w_as_uint8") == 1


@pytest.fixture
def int8_model(tmp_path: Path) -> Path:
    _, weights = _loud_operands()
    model = _model(
        [helper.make_node("MatMulInteger", ["a", "w"], ["y"])],
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [ROWS, DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [ROWS, COLUMNS])],
        {"w": weights},
    )
    path = tmp_path / "int8.onnx"
    onnx.save(model, str(path))
    return path


def test_a_cpu_that_does_not_clip_loads_the_model_as_it_is(
    int8_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(int8_kernels, "saturates_signed_weights", lambda: False)
    assert session_source(str(int8_model)) == str(int8_model)


def test_a_cpu_that_clips_loads_unsigned_weights_only(
    int8_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(int8_kernels, "saturates_signed_weights", lambda: True)
    source = session_source(str(int8_model))
    assert isinstance(source, bytes)
    kinds = {init.name: init.data_type for init in onnx.load_from_string(source).graph.initializer}
    assert TensorProto.INT8 not in kinds.values()  # the signed copies are not kept in memory
    assert kinds["w_as_uint8"] == TensorProto.UINT8
    activations, weights = _loud_operands()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(
        session.run(None, {"a": activations})[0],
        activations.astype(np.int64) @ weights.astype(np.int64),
    )
