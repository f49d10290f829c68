"""Cut a Unigram (SentencePiece) vocabulary, and the embedding rows it indexes, to a subset.

A multilingual encoder carries a hundred thousand pieces, and every one costs a row of the
embedding table whether the languages a model serves ever produce it or not. The Unigram
tokenizer picks the best segmentation among the pieces it has, so dropping pieces changes a
text's tokens only where its best segmentation used a dropped one: a text whose pieces are all
kept gets the very same tokens (renumbered) and the graph the very same rows.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from intent.text_format import format_input, spell_pair

# Marks the start of a word in a SentencePiece piece.
WORD_START = "\u2581"
# Most encoders gather their word embeddings with the graph input of this name.
INPUT_IDS = "input_ids"
ModelInput = str | tuple[str, str]


def always_kept(vocab: Sequence[Sequence[Any]]) -> set[int]:
    """Pieces no word list finds but text is made of: single characters (so a rare word still
    splits into letters instead of becoming unknown) and pieces with no letter at all
    (numbers, prices, punctuation runs, emoticons)."""
    kept = set()
    for index, (piece, _score) in enumerate(vocab):
        text = piece.replace(WORD_START, "")
        if len(text) <= 1 or not any(ch.isalpha() for ch in text):
            kept.add(index)
    return kept


def word_forms(words: Iterable[str]) -> list[str]:
    """Each word as text spells it: lower case, capitalised, upper case, and after a hyphen
    (inside a compound, an address or an order reference it starts no word)."""
    forms = []
    for word in words:
        forms += [word, word.capitalize(), word.upper(), f"-{word}"]
    return forms


def model_inputs(rows: Iterable[dict[str, Any]], emoji_style: str) -> list[ModelInput]:
    """Rows (``message``, ``conversation_history``) as the model reads them."""
    inputs: list[ModelInput] = []
    for row in rows:
        first, second = spell_pair(
            format_input(row["message"], row.get("conversation_history")), emoji_style
        )
        inputs.append((first, second) if second else first)
    return inputs


def pieces_of(tokenizer: Tokenizer, texts: Sequence[ModelInput]) -> set[int]:
    """The ids of every piece the tokenizer produces for ``texts``."""
    ids: set[int] = set()
    for encoding in tokenizer.encode_batch(list(texts), add_special_tokens=False):
        ids.update(encoding.ids)
    return ids


def trimmed_tokenizer(spec: dict[str, Any], kept: Sequence[int]) -> dict[str, Any]:
    """``tokenizer.json`` (parsed) holding only the ``kept`` pieces, renumbered in their order.

    Special tokens must be among them; their ids move wherever the file names them."""
    model = spec["model"]
    if model.get("type") != "Unigram":
        raise ValueError(f"only Unigram vocabularies can be cut, not {model.get('type')}")
    new_id = {old: new for new, old in enumerate(kept)}
    special = [token["id"] for token in spec.get("added_tokens", [])]
    missing = [old for old in special + [model["unk_id"]] if old not in new_id]
    if missing:
        raise ValueError(f"special tokens must be kept: ids {missing}")
    out = copy.deepcopy(spec)
    out["model"]["vocab"] = [model["vocab"][old] for old in kept]
    out["model"]["unk_id"] = new_id[model["unk_id"]]
    for token in out.get("added_tokens", []):
        token["id"] = new_id[token["id"]]
    for entry in ((out.get("post_processor") or {}).get("special_tokens") or {}).values():
        entry["ids"] = [new_id[old] for old in entry["ids"]]
    if out.get("padding"):
        out["padding"]["pad_id"] = new_id[out["padding"]["pad_id"]]
    return out


def trimmed_config(config: dict[str, Any], kept: Sequence[int]) -> dict[str, Any]:
    """``tokenizer_config.json`` with its special tokens' ids renumbered."""
    new_id = {old: new for new, old in enumerate(kept)}
    out = dict(config)
    if "added_tokens_decoder" in config:
        out["added_tokens_decoder"] = {
            str(new_id[int(old)]): token for old, token in config["added_tokens_decoder"].items()
        }
    return out


def trim_embedding_tables(graph: Any, kept: Sequence[int], vocab_size: int) -> list[str]:
    """Keep only the ``kept`` rows of every initializer the graph gathers by ``input_ids``
    (the word embeddings, and their scales when quantized); returns their names.

    Refuses a graph that reads such a table any other way: renumbering ids would then change
    what it computes."""
    from onnx import numpy_helper

    initializers = {init.name: init for init in graph.initializer}
    rows = np.asarray(kept, dtype=np.int64)
    trimmed = []
    for name, init in initializers.items():
        if not init.dims or init.dims[0] != vocab_size:
            continue
        readers = [node for node in graph.node if name in node.input]
        for node in readers:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            if node.op_type != "Gather" or list(node.input) != [name, INPUT_IDS] or axis != 0:
                raise ValueError(f"{name} is read by {node.op_type} {node.name!r}, not gathered")
        table = numpy_helper.to_array(init)
        init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(table[rows]), name))
        trimmed.append(name)
    if not trimmed:
        raise ValueError(f"no initializer of {vocab_size} rows is gathered by {INPUT_IDS}")
    return trimmed


def changed_segmentation(
    before: Tokenizer, after: Tokenizer, kept: Sequence[int], texts: Sequence[ModelInput]
) -> list[int]:
    """Indexes of ``texts`` whose tokens differ between the two tokenizers (``after``'s ids
    mapped back through ``kept``)."""
    old_ids = np.asarray(kept)
    changed = []
    pairs = zip(before.encode_batch(list(texts)), after.encode_batch(list(texts)), strict=True)
    for index, (old, new) in enumerate(pairs):
        if old.ids != old_ids[new.ids].tolist():
            changed.append(index)
    return changed
