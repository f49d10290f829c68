from collections import Counter

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from training import sources, splits
from training.dataset import DataConfig, build_splits
from training.labels import LABELS

from .helpers import bitext_csv


def _build():
    return build_splits(DataConfig(bitext=str(bitext_csv())))


def test_splits_are_deterministic_and_cover_every_label():
    first, info = _build()
    second, info2 = _build()
    assert info["split_fingerprints"] == info2["split_fingerprints"]
    for name in splits.SPLITS:
        assert [r["message"] for r in first[name]] == [r["message"] for r in second[name]]
        assert set(Counter(r["label"] for r in first[name])) == set(LABELS)
    total = sum(info["split_sizes"].values())
    assert 0.1 < info["split_sizes"]["test"] / total < 0.2


def test_no_group_or_near_duplicate_crosses_splits():
    result, info = _build()
    groups = {name: {r["group"] for r in result[name]} for name in splits.SPLITS}
    assert not groups["train"] & groups["test"]
    assert not groups["train"] & groups["validation"]
    assert not groups["validation"] & groups["test"]

    # Same features as the splitter: fitted on every row before the near-duplicate filter.
    all_rows = (
        sources.load_corpus() + sources.load_written() + sources.load_bitext_csv(bitext_csv())
    )
    vec = TfidfVectorizer(ngram_range=(1, 2), preprocessor=splits.normalize)
    vec.fit([splits.row_text(r) for r in all_rows])
    train = vec.transform([splits.row_text(r) for r in result["train"]])
    test = vec.transform([splits.row_text(r) for r in result["test"]])
    sims = (test @ train.T).max(axis=1).toarray().ravel()
    assert float(np.max(sims)) < info["near_dup_threshold"]


def test_near_duplicates_in_different_groups_are_dropped_from_test():
    rows = []
    for i in range(40):
        rows.append(
            {
                "message": f"where is my parcel number {i} please",
                "label": "track_order",
                "conversation_history": [],
                "source": "a",
                "group": f"g{i}",
            }
        )
    result = splits.make_splits(rows, seed=1)
    assert len(result["train"]) > 0
    assert result["test"] == []
    dropped = result["_dropped_near_duplicates"]
    assert dropped["test"] > 0  # type: ignore[call-overload]  # a count dict among the row lists
