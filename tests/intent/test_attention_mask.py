"""The runner loads each graph with a Softmax-friendly padding fill, and answers as the stored
graph does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from intent import runner
from intent.attention_mask import MASK_FILL, with_fast_mask_fill
from intent.routed import open_model

MODELS = Path(__file__).resolve().parents[2] / "models"
LOWEST = np.finfo(np.float32).min


def _masked_softmax(fill_as_constant: bool, reader: str = "Softmax") -> onnx.ModelProto:
    """``reader``(scores + Where(padding, fill, 0)): the exported encoders' attention masking
    when ``reader`` is Softmax."""
    fill = numpy_helper.from_array(np.array(LOWEST, np.float32), "fill")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    nodes = [
        helper.make_node("Where", ["padding", "fill", "zero"], ["bias"]),
        helper.make_node("Add", ["scores", "bias"], ["masked"]),
        helper.make_node(reader, ["masked"], ["weights"], axis=-1),
    ]
    initializers = [zero]
    if fill_as_constant:
        nodes.insert(0, helper.make_node("Constant", [], ["fill"], value=fill))
    else:
        initializers.append(fill)
    graph = helper.make_graph(
        nodes,
        "masked_softmax",
        [
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 4]),
            helper.make_tensor_value_info("padding", TensorProto.BOOL, [2, 4]),
        ],
        [helper.make_tensor_value_info("weights", TensorProto.FLOAT, [2, 4])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


@pytest.mark.parametrize("fill_as_constant", [True, False])
def test_the_lowest_fill_becomes_mask_fill_and_the_weights_stay(fill_as_constant: bool) -> None:
    model = _masked_softmax(fill_as_constant)
    feeds = {
        "scores": np.array([[1.5, -2.0, 0.25, 3.0], [0.5, 0.5, -1.0, 2.0]], np.float32),
        "padding": np.array([[False, False, True, True], [False, True, True, True]]),
    }
    before = _run(model, feeds)
    assert with_fast_mask_fill(model) == 1
    fills = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name == "fill"]
    constants = [node for node in model.graph.node if node.op_type == "Constant"]
    fills += [numpy_helper.to_array(node.attribute[0].t) for node in constants]
    assert [float(f) for f in fills] == [MASK_FILL]
    after = _run(model, feeds)
    kept = ~feeds["padding"]
    assert np.array_equal(before[kept], after[kept])  # the real positions' weights, bit for bit
    assert before[~kept].max() == 0.0
    assert after[~kept].max() < 1e-12  # padding's weight: e^-30 of the row's largest


def test_a_fill_that_does_not_feed_a_softmax_is_left_alone() -> None:
    model = _masked_softmax(fill_as_constant=False, reader="LogSoftmax")
    assert with_fast_mask_fill(model) == 0
    assert float(numpy_helper.to_array(model.graph.initializer[1])) == LOWEST


def test_a_graph_without_such_a_fill_is_left_alone() -> None:
    model = _masked_softmax(fill_as_constant=False)
    model.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.array(-1e4, np.float32), "fill"))
    assert with_fast_mask_fill(model) == 0
    assert float(numpy_helper.to_array(model.graph.initializer[1])) == -1e4


def test_each_served_graph_answers_as_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every model in models/ as the runner loads it against its stored graph, on a batch
    whose lengths differ (padding in every run) and with a history."""
    rows = [
        ("where is my order", None),
        ("I was charged twice for the same order and nobody answers my emails", None),
        ("¿Dónde está mi pedido? Lo pedí hace dos semanas y todavía no ha llegado.", None),
        ("ok", "customer: can I return the shoes? | agent: yes, within 30 days"),
        ("Wo ist meine Bestellung?", None),
    ]
    for card in MODELS.glob("*/model_card.json"):
        version = card.parent
        as_loaded = open_model(version).logits(rows)
        monkeypatch.setattr(runner, "session_source", lambda path: path)
        as_stored = open_model(version).logits(rows)
        monkeypatch.undo()
        assert np.array_equal(as_loaded, as_stored), json.loads(card.read_text())["model_version"]


def test_every_stored_graph_has_its_attention_fill_found() -> None:
    graphs = sorted(MODELS.glob("*/**/model.onnx"))
    assert graphs
    for graph in graphs:
        assert with_fast_mask_fill(onnx.load(str(graph))) == 1, graph
