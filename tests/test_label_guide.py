"""The label guide (docs/label-guide.md) and the code agree: every label of the model has its
section in the guide and its clause in the OpenAPI summary, and the document the app serves
gives that summary with ``intent`` and ``top_intent``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from serving.label_guide import INTENT_LABELS_SUMMARY, LABEL_CLAUSES, LABEL_GUIDE
from training.labels import LABELS

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / LABEL_GUIDE


def _section_labels() -> list[str]:
    text = GUIDE.read_text(encoding="utf-8")
    return re.findall(r"^## `([a-z_]+)`", text, flags=re.MULTILINE)


def test_the_guide_has_one_section_per_label_in_the_models_order() -> None:
    assert _section_labels() == LABELS


def test_the_summary_has_one_clause_per_label_and_points_to_the_guide() -> None:
    assert list(LABEL_CLAUSES) == LABELS
    for label in LABELS:
        assert f"`{label}`: {LABEL_CLAUSES[label]}" in INTENT_LABELS_SUMMARY
    assert INTENT_LABELS_SUMMARY.endswith(f"{LABEL_GUIDE}.")


def test_the_model_documentation_links_the_guide() -> None:
    for page in ("docs/model.md", "docs/inference.md"):
        assert "(label-guide.md)" in (ROOT / page).read_text(encoding="utf-8"), page


@pytest.mark.db
def test_the_served_openapi_document_gives_the_summary_with_every_intent(
    client: TestClient,
) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    fields = [
        ("IntentPrediction", "intent"),
        ("IntentClassifyResponse", "top_intent"),
        ("BatchResultItem", "top_intent"),
    ]
    for schema, field in fields:
        description = schemas[schema]["properties"][field]["description"]
        assert INTENT_LABELS_SUMMARY in description, (schema, field)
