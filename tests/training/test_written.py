"""The hand-written messages (``training/data/written/``): well-formed, labelled by their file,
and independent of the evaluation sets."""

from collections import Counter
from pathlib import Path

import pytest

from training import sources, splits
from training.dataset import DataConfig, build_splits
from training.labels import LABELS
from training.train import repeat_written

DATA = Path(sources.__file__).parent / "data"
EVALUATION_SETS = ("field_eval.jsonl", "field_eval_v2.jsonl", "challenge.jsonl")


def _label_of(path: Path) -> str:
    return path.name.split(".")[0]


@pytest.fixture(scope="module")
def written() -> list[dict]:
    return sources.load_written()


def test_every_label_has_single_messages_and_dialogues():
    names = {p.name for p in sources.written_files()}
    for label in LABELS:
        assert f"{label}.jsonl" in names
        assert f"{label}.dialogues.jsonl" in names
    assert len(names) == 2 * len(LABELS)


@pytest.mark.parametrize("path", sources.written_files(), ids=lambda p: p.name)
def test_rows_carry_the_label_of_their_file_and_the_right_shape(path: Path):
    rows = sources.read_jsonl(path)
    assert len(rows) >= 40
    assert {r["label"] for r in rows} == {_label_of(path)}
    for row in rows:
        assert row["message"].strip()
        history = row["conversation_history"]
        if path.name.endswith(".dialogues.jsonl"):
            assert 1 <= len(history) <= 10, row
            assert history[-1]["role"] == "agent", row
            assert {t["role"] for t in history} <= {"agent", "customer"}
        else:
            assert history == [], row


def test_no_row_is_written_twice(written):
    keys = Counter((r["message"].strip().lower(), str(r["conversation_history"])) for r in written)
    assert [k for k, n in keys.items() if n > 1] == []


def test_single_messages_span_short_chat_to_long_email(written):
    single = [r["message"] for r in written if not r["conversation_history"]]
    assert sum(len(m.split()) <= 4 for m in single) >= 0.05 * len(single)
    assert sum(len(m) >= 450 for m in single) >= 0.03 * len(single)


def test_no_row_near_duplicates_an_evaluation_set(written):
    # Written without looking at the evaluation sets; this holds it: a training row that
    # came out close to an evaluation row would flatter the evaluation.
    from sklearn.feature_extraction.text import TfidfVectorizer

    held_out = [r for name in EVALUATION_SETS for r in sources.read_jsonl(DATA / name)]
    texts = [splits.row_text(r) for r in written]
    reference = [splits.row_text(r) for r in held_out]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), preprocessor=splits.normalize)
    vectorizer.fit(texts + reference)
    similarity = splits._max_similarity(
        vectorizer.transform(texts), vectorizer.transform(reference)
    )
    close = [(texts[i], float(similarity[i])) for i in range(len(texts)) if similarity[i] >= 0.7]
    assert close == []


def test_splits_keep_written_rows_as_a_source_of_their_own(written):
    rows, info = build_splits(DataConfig(bitext=None))
    described = {s["name"]: s for s in info["sources"]}
    assert described["switchyard-written"]["rows"] == len(written)
    by_split = {name: [r for r in rows[name] if r["source"] == "written"] for name in rows}
    assert sum(map(len, by_split.values())) <= len(written)
    for label in LABELS:
        # Stratified by label and source: every label's written rows reach every split.
        assert all(any(r["label"] == label for r in by_split[name]) for name in by_split)
    without, _ = build_splits(DataConfig(bitext=None, written=None))
    assert not any(r["source"] == "written" for name in without for r in without[name])


def test_written_rows_can_be_seen_more_than_once_per_epoch():
    rows = [{"message": "a", "source": "written"}, {"message": "b", "source": "corpus"}]
    assert repeat_written(rows, 1) == rows
    tripled = repeat_written(rows, 3)
    assert [r["message"] for r in tripled].count("a") == 3
    assert [r["message"] for r in tripled].count("b") == 1
    with pytest.raises(ValueError, match="at least 1"):
        repeat_written(rows, 0)
