"""Feed-forward blocks are found in a graph, and reordering their hidden channels changes no
result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from training.feed_forward import hidden_activations, reorder_hidden

from .onnx_toys import save_feed_forward_model, save_two_matmul_model


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_the_block_is_found_by_its_hidden_activation(tmp_path: Path) -> None:
    save_feed_forward_model(tmp_path / "ffn.onnx", hidden=24)
    blocks = hidden_activations(onnx.load(str(tmp_path / "ffn.onnx")))
    assert list(blocks) == ["gelu"]
    block = blocks["gelu"]
    assert (block["first"].input[1], block["first_bias"], block["second"].input[1]) == (
        "W1", "b1", "W2",
    )  # fmt: skip
    assert [node.op_type for node in block["activation"]] == ["Div", "Erf", "Add", "Mul", "Mul"]


def test_no_block_where_the_activation_is_not_elementwise_or_is_read_elsewhere(
    tmp_path: Path,
) -> None:
    save_two_matmul_model(tmp_path / "relu.onnx")  # Relu is not one of the elementwise ops
    assert hidden_activations(onnx.load(str(tmp_path / "relu.onnx"))) == {}
    save_feed_forward_model(tmp_path / "ffn.onnx", hidden=24)
    model = onnx.load(str(tmp_path / "ffn.onnx"))
    # The hidden pre-activation also leaves the graph: its channels may not be reordered.
    model.graph.output.append(helper.make_tensor_value_info("h", onnx.TensorProto.FLOAT, None))
    model.graph.node.append(helper.make_node("Identity", ["h"], ["h_out"]))
    assert hidden_activations(model) == {}


def test_reordering_the_hidden_channels_changes_no_result(tmp_path: Path) -> None:
    save_feed_forward_model(tmp_path / "ffn.onnx", hidden=24)
    model = onnx.load(str(tmp_path / "ffn.onnx"))
    x = np.random.default_rng(0).normal(size=(2, 5, 16)).astype(np.float32)
    before = _run(model, x)
    order = np.random.default_rng(1).permutation(24)
    reorder_hidden(model, hidden_activations(model)["gelu"], order)
    w1 = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}["W1"]
    original = {i.name: onnx.numpy_helper.to_array(i)
                for i in onnx.load(str(tmp_path / "ffn.onnx")).graph.initializer}  # fmt: skip
    assert np.array_equal(w1, original["W1"][:, order])
    np.testing.assert_allclose(_run(model, x), before, rtol=1e-5, atol=1e-5)
