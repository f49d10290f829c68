"""TF-IDF + logistic regression baseline trained on the same rows as the transformer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from intent.text_format import format_input
from training.labels import LABEL_TO_ID

BASELINE_FILE = "baseline_tfidf_lr.joblib"


def baseline_text(message: str, history: Sequence[Mapping[str, str]] | None) -> str:
    """The message, then the history with a marker so history words stay distinguishable."""
    first, second = format_input(message, history)
    return first if not second else f"{first} || {second}"


def train_baseline(rows: list[dict[str, Any]], seed: int = 13) -> Any:
    """Fit word + character n-gram TF-IDF features and a multinomial logistic regression."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline, make_union

    features = make_union(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1),
        TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True, min_df=2),
    )
    model = make_pipeline(features, LogisticRegression(C=10.0, max_iter=2000, random_state=seed))
    texts = [baseline_text(r["message"], r.get("conversation_history")) for r in rows]
    model.fit(texts, [LABEL_TO_ID[r["label"]] for r in rows])
    return model


def baseline_probs(model: Any, rows: list[dict[str, Any]]) -> np.ndarray:
    """Class probabilities (batch x 10) in label order."""
    texts = [baseline_text(r["message"], r.get("conversation_history")) for r in rows]
    probs = model.predict_proba(texts)
    full = np.zeros((len(rows), len(LABEL_TO_ID)))
    full[:, model.classes_] = probs
    return full
