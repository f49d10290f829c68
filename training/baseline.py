"""TF-IDF + logistic regression baseline trained on the same rows as the transformer.

Model directories do not ship it (11 MB a version). The training run and evaluation
(``training.evaluate.baseline_for_model``, from the model card) fit it on the model's training
rows and cache the fitted pipeline under ``var/baselines/`` (gitignored), never in ``models/``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from intent.text_format import format_input
from training.labels import LABEL_TO_ID


def default_cache_dir() -> Path:
    """``<var_dir>/baselines``: core.settings' var_dir (same variable, same default), read
    here because training does not import core."""
    var_dir = os.environ.get("SWITCHYARD_VAR_DIR")
    root = Path(var_dir) if var_dir else Path(__file__).resolve().parent.parent / "var"
    return root / "baselines"


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


def baseline_cache_key(rows: list[dict[str, Any]], seed: int) -> str:
    """Digest of everything the fit depends on: its input texts and labels, the seed, the
    recipe's own source (editing it retires old entries) and scikit-learn's version."""
    import sklearn

    payload = json.dumps(
        [
            [baseline_text(r["message"], r.get("conversation_history")) for r in rows],
            [r["label"] for r in rows],
            seed,
            inspect.getsource(train_baseline),
            sklearn.__version__,
        ]
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def cached_baseline(
    rows: list[dict[str, Any]], seed: int = 13, cache_dir: Path | None = None
) -> Any:
    """``train_baseline(rows, seed)``, loaded from ``cache_dir`` (default: ``default_cache_dir()``)
    when fitted there before: a fit takes about a minute on a full training split."""
    import joblib

    cache_dir = cache_dir or default_cache_dir()
    path = cache_dir / f"tfidf_lr-{baseline_cache_key(rows, seed)}.joblib"
    if path.is_file():
        try:
            return joblib.load(path)
        except Exception:  # a truncated or unreadable entry: fit again and replace it
            pass
    print(f"fitting the TF-IDF baseline on {len(rows)} rows; cache: {path}", file=sys.stderr)
    model = train_baseline(rows, seed)
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Write then rename, so a concurrent reader never loads half a file.
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    joblib.dump(model, tmp, compress=3)
    tmp.replace(path)
    return model


def baseline_probs(model: Any, rows: list[dict[str, Any]]) -> np.ndarray:
    """Class probabilities (batch x 10) in label order."""
    texts = [baseline_text(r["message"], r.get("conversation_history")) for r in rows]
    probs = model.predict_proba(texts)
    full = np.zeros((len(rows), len(LABEL_TO_ID)))
    full[:, model.classes_] = probs
    return full
