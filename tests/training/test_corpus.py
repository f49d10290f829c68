import json
from collections import defaultdict

from training import build_corpus
from training.labels import LABELS
from training.sources import CORPUS_PATH, load_corpus


def test_corpus_file_is_reproducible_from_the_templates():
    committed = [json.loads(line) for line in CORPUS_PATH.read_text().splitlines()]
    assert committed == build_corpus.build()


def test_corpus_covers_every_label_with_single_and_multi_turn_rows():
    rows = load_corpus()
    single, multi = defaultdict(int), defaultdict(int)
    for row in rows:
        (multi if row["conversation_history"] else single)[row["label"]] += 1
    for label in LABELS:
        assert single[label] >= 150, label
        assert multi[label] >= 50, label


def test_history_decides_short_replies():
    rows = load_corpus()
    labels_of_reply = defaultdict(set)
    for row in rows:
        if row["conversation_history"] and "first option" in row["message"].lower():
            labels_of_reply["the first option"].add(row["label"])
    # The same words mean refund or cancel depending on what the agent offered.
    assert {"refund_request", "cancel_order"} <= labels_of_reply["the first option"]
