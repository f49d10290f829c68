"""Cutting a Unigram vocabulary keeps every text made of kept pieces exactly as it was."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from training import vocabulary

START = "\u2581"
PIECES = [
    ("<s>", 0.0),
    ("<pad>", 0.0),
    ("</s>", 0.0),
    ("<unk>", 0.0),
    (START, -3.0),
    ("a", -4.0),
    ("b", -4.0),
    ("c", -4.0),
    ("d", -4.0),
    (f"{START}ab", -2.0),
    (f"{START}abc", -1.0),
    ("cd", -2.5),
    ("12", -2.0),
    (f"{START}dd", -2.0),
    ("<mask>", 0.0),
]
DROPPED = [10, 11, 13]  # "▁abc", "cd", "▁dd"
KEPT = [i for i in range(len(PIECES)) if i not in DROPPED]


def _tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.Unigram(PIECES, unk_id=3))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.add_special_tokens(["<s>", "</s>", "<mask>"])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    return tokenizer


def _cut() -> tuple[Tokenizer, Tokenizer]:
    before = _tokenizer()
    spec = vocabulary.trimmed_tokenizer(json.loads(before.to_str()), KEPT)
    return before, Tokenizer.from_str(json.dumps(spec))


def test_texts_made_of_kept_pieces_get_the_same_tokens_renumbered():
    before, after = _cut()
    texts: list[vocabulary.ModelInput] = ["ab 12", "a b", ("ab", "c a"), "ba12"]
    assert vocabulary.changed_segmentation(before, after, KEPT, texts) == []
    encoded = after.encode("ab 12")
    assert encoded.tokens == ["<s>", f"{START}ab", START, "12", "</s>"]
    assert [KEPT[i] for i in encoded.ids] == before.encode("ab 12").ids


def test_a_text_that_used_a_dropped_piece_splits_into_kept_ones_and_is_counted():
    before, after = _cut()
    texts = ["ab", "abc", "dd", "cd"]
    assert vocabulary.changed_segmentation(before, after, KEPT, texts) == [1, 2, 3]
    assert after.encode("abc", add_special_tokens=False).tokens == [f"{START}ab", "c"]
    assert "<unk>" not in after.encode("dd cd").tokens  # single characters stay


def test_special_tokens_move_with_the_renumbering():
    _, after = _cut()
    assert after.token_to_id("<mask>") == len(KEPT) - 1
    assert after.encode("a", "b").ids[0] == after.token_to_id("<s>") == 0
    spec = json.loads(after.to_str())
    assert spec["model"]["unk_id"] == 3
    config = {"added_tokens_decoder": {"0": {"content": "<s>"}, "14": {"content": "<mask>"}}}
    assert vocabulary.trimmed_config(config, KEPT)["added_tokens_decoder"] == {
        "0": {"content": "<s>"},
        str(len(KEPT) - 1): {"content": "<mask>"},
    }


def test_special_tokens_cannot_be_cut():
    spec = json.loads(_tokenizer().to_str())
    with pytest.raises(ValueError, match="special tokens must be kept"):
        vocabulary.trimmed_tokenizer(spec, [i for i in KEPT if i != 14])


def test_characters_numbers_and_symbols_are_always_kept():
    kept = vocabulary.always_kept(PIECES)
    assert {4, 5, 6, 7, 8, 12} <= kept  # "▁", single letters, "12"
    assert not {9, 10, 11, 13} & kept  # pieces with two letters


def test_word_forms_spell_words_as_text_does():
    assert vocabulary.word_forms(["hallo"]) == ["hallo", "Hallo", "HALLO", "-hallo"]


def _embedding_graph(table: np.ndarray, scales: np.ndarray) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["rows"], name="embeddings"),
        helper.make_node("Gather", ["scales", "input_ids"], ["row_scales"], name="scales"),
        helper.make_node("Mul", ["rows", "row_scales"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "embeddings",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "tokens", 4])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(scales, "scales")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run(model: onnx.ModelProto, ids: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString())
    return session.run(None, {"input_ids": ids})[0]


def test_the_cut_graph_gives_each_kept_piece_its_old_row():
    rng = np.random.default_rng(3)
    table = rng.normal(size=(len(PIECES), 4)).astype(np.float32)
    scales = rng.uniform(0.5, 2, size=(len(PIECES), 1)).astype(np.float32)
    model = _embedding_graph(table, scales)
    names = vocabulary.trim_embedding_tables(model.graph, KEPT, len(PIECES))
    assert sorted(names) == ["scales", "table"]
    new_ids = np.array([[0, 9, 10, 11]], dtype=np.int64)  # "▁ab", "12", "<mask>" renumbered
    old_ids = np.array(KEPT)[new_ids]
    expected = _run(_embedding_graph(table, scales), old_ids)
    assert np.array_equal(_run(model, new_ids), expected)


def test_a_table_read_other_than_by_gather_is_refused():
    table = np.ones((len(PIECES), 4), dtype=np.float32)
    model = _embedding_graph(table, np.ones((len(PIECES), 1), dtype=np.float32))
    model.graph.node.append(helper.make_node("Identity", ["table"], ["copy"]))
    with pytest.raises(ValueError, match="not gathered"):
        vocabulary.trim_embedding_tables(model.graph, KEPT, len(PIECES))
