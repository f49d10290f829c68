"""Deterministic train/validation/test splits without near-duplicates across them.

Rows that are variants of one another share a ``group`` (a corpus template id, or for
Bitext the utterance with digits and punctuation normalised away); a group lands in one
split only, stratified by label and source. Afterwards any validation or test row whose
TF-IDF cosine similarity to a row of an earlier split reaches ``NEAR_DUP_THRESHOLD`` is
dropped, so paraphrases that escaped the grouping cannot leak.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from typing import Any

import numpy as np

NEAR_DUP_THRESHOLD = 0.9
SPLITS = ("train", "validation", "test")


def normalize(text: str) -> str:
    """Lower-case, digits to 0, punctuation dropped, whitespace collapsed."""
    text = re.sub(r"\d+", "0", text.lower())
    text = re.sub(r"[^\w\s]", " ", text)
    return " ".join(text.split())


def row_text(row: dict[str, Any]) -> str:
    """Message plus history, the text compared for near-duplicates."""
    history = " ".join(turn.get("text", "") for turn in row.get("conversation_history") or [])
    return f"{row['message']} {history}".strip()


def ensure_groups(rows: list[dict[str, Any]]) -> None:
    """Give every row without a template group one derived from its normalised text."""
    for row in rows:
        if not row.get("group"):
            row["group"] = f"{row.get('source', 'data')}:{normalize(row_text(row))}"


def _assign_groups(
    rows: list[dict[str, Any]], seed: int, val_frac: float, test_frac: float
) -> dict[str, str]:
    members: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        members[row["group"]].append(row)
    strata: dict[tuple[str, str], list[str]] = defaultdict(list)
    for group, items in members.items():
        strata[(items[0]["label"], items[0].get("source", ""))].append(group)
    assignment: dict[str, str] = {}
    for stratum in sorted(strata):
        groups = sorted(strata[stratum])
        random.Random(f"{seed}:{stratum}").shuffle(groups)
        total = sum(len(members[g]) for g in groups)
        counts = {"test": 0, "validation": 0}
        for group in groups:
            size = len(members[group])
            if counts["test"] + size / 2 <= test_frac * total:
                split = "test"
            elif counts["validation"] + size / 2 <= val_frac * total:
                split = "validation"
            else:
                split = "train"
            if split in counts:
                counts[split] += size
            assignment[group] = split
    return assignment


def _max_similarity(query: Any, reference: Any, chunk: int = 2048) -> np.ndarray:
    """Row-wise maximum cosine similarity of L2-normalised sparse rows."""
    if reference.shape[0] == 0 or query.shape[0] == 0:
        return np.zeros(query.shape[0])
    out = np.empty(query.shape[0])
    for start in range(0, query.shape[0], chunk):
        block = query[start : start + chunk] @ reference.T
        out[start : start + chunk] = block.max(axis=1).toarray().ravel()
    return out


def make_splits(
    rows: list[dict[str, Any]],
    seed: int = 13,
    val_frac: float = 0.15,
    test_frac: float = 0.15,
    near_dup_threshold: float = NEAR_DUP_THRESHOLD,
) -> dict[str, list[dict[str, Any]]]:
    """Split rows by group, then drop validation/test rows near-duplicating earlier splits."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    ensure_groups(rows)
    assignment = _assign_groups(rows, seed, val_frac, test_frac)
    splits: dict[str, list[dict[str, Any]]] = {name: [] for name in SPLITS}
    for row in rows:
        splits[assignment[row["group"]]].append(row)
    for name in SPLITS:
        splits[name].sort(
            key=lambda r: hashlib.sha1(json.dumps(r, sort_keys=True).encode()).hexdigest()
        )

    vectorizer = TfidfVectorizer(ngram_range=(1, 2), preprocessor=normalize)
    vectorizer.fit([row_text(r) for r in rows])
    vectors = {name: vectorizer.transform([row_text(r) for r in splits[name]]) for name in SPLITS}
    dropped = {}
    sim_val = _max_similarity(vectors["validation"], vectors["train"])
    keep_val = sim_val < near_dup_threshold
    from scipy.sparse import vstack

    earlier = vstack([vectors["train"], vectors["validation"][np.flatnonzero(keep_val)]])
    sim_test = _max_similarity(vectors["test"], earlier)
    keep_test = sim_test < near_dup_threshold
    dropped["validation"] = int((~keep_val).sum())
    dropped["test"] = int((~keep_test).sum())
    splits["validation"] = [r for r, k in zip(splits["validation"], keep_val, strict=True) if k]
    splits["test"] = [r for r, k in zip(splits["test"], keep_test, strict=True) if k]
    splits["_dropped_near_duplicates"] = dropped  # type: ignore[assignment]  # a count among the row lists
    return splits


def split_fingerprint(rows: list[dict[str, Any]]) -> str:
    """Short hash of a split's content, recorded in the model card to detect drift."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(
            json.dumps([row["message"], row.get("conversation_history"), row["label"]]).encode()
        )
    return digest.hexdigest()[:16]
