"""POST /v1/inference/intent-classify over real HTTP (the model runs in-process)."""

from __future__ import annotations

import math

import httpx
import pytest

from tests.assertions import assert_error

pytestmark = [pytest.mark.db]

PATH = "/inference/intent-classify"
LABELS = {
    "track_order",
    "cancel_order",
    "return_item",
    "refund_request",
    "product_inquiry",
    "change_address",
    "payment_issue",
    "complaint",
    "compliment",
    "other",
}


def test_classify_returns_contract_fields(http: httpx.Client, model_version: str) -> None:
    response = http.post(PATH, json={"message": "Where is my package? It has not arrived yet."})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {
        "request_id",
        "message",
        "predictions",
        "top_intent",
        "latency_ms",
        "model_version",
    }
    assert body["request_id"] == response.headers["x-request-id"]
    assert body["message"] == "Where is my package? It has not arrived yet."
    assert body["model_version"] == model_version
    assert isinstance(body["latency_ms"], int) and body["latency_ms"] >= 0
    assert body["top_intent"] in LABELS
    assert len(body["predictions"]) == 1
    assert body["predictions"][0]["intent"] == body["top_intent"]
    assert 0.0 < body["predictions"][0]["confidence"] <= 1.0


def test_classify_top5_confidences_are_probabilities(http: httpx.Client) -> None:
    # The full sum over ten labels is checked on the model itself (test_model.py); through
    # the API at most five are visible, and they must hold at most the whole mass.
    response = http.post(PATH, json={"message": "I want my money back", "top_k": 5})
    predictions = response.json()["predictions"]
    assert len(predictions) == 5
    assert len({p["intent"] for p in predictions}) == 5
    assert {p["intent"] for p in predictions} <= LABELS
    assert all(0.0 <= p["confidence"] <= 1.0 for p in predictions)
    assert 0.0 < sum(p["confidence"] for p in predictions) <= 1.0 + 1e-6
    confidences = [p["confidence"] for p in predictions]
    assert confidences == sorted(confidences, reverse=True)
    assert predictions[0]["intent"] == response.json()["top_intent"]


@pytest.mark.parametrize("top_k", [1, 2, 5])
def test_classify_returns_at_most_top_k_sorted(http: httpx.Client, top_k: int) -> None:
    response = http.post(PATH, json={"message": "cancel my order please", "top_k": top_k})
    assert response.status_code == 200
    confidences = [p["confidence"] for p in response.json()["predictions"]]
    assert len(confidences) == top_k
    assert confidences == sorted(confidences, reverse=True)


def test_classify_threshold_filters_predictions_but_keeps_top_intent(http: httpx.Client) -> None:
    message = {"message": "hello, I have a question about something"}
    everything = http.post(PATH, json={**message, "top_k": 5}).json()
    confidences = [p["confidence"] for p in everything["predictions"]]
    # A threshold between the 2nd and 3rd confidence keeps exactly the first two.
    cut = (confidences[1] + confidences[2]) / 2
    filtered = http.post(PATH, json={**message, "top_k": 5, "threshold": cut}).json()
    assert [p["intent"] for p in filtered["predictions"]] == [
        p["intent"] for p in everything["predictions"][:2]
    ]
    assert all(p["confidence"] >= cut for p in filtered["predictions"])

    # threshold 1: nothing reaches it (ten labels share the mass), yet top_intent is given.
    none_pass = http.post(PATH, json={**message, "top_k": 5, "threshold": 1}).json()
    assert none_pass["predictions"] == []
    assert none_pass["top_intent"] == everything["top_intent"]

    # threshold 0 (the default) filters nothing.
    zero = http.post(PATH, json={**message, "top_k": 5, "threshold": 0}).json()
    assert len(zero["predictions"]) == 5


def test_classify_uses_conversation_history(http: httpx.Client) -> None:
    history = [
        {"role": "customer", "text": "I ordered a blue jacket last week."},
        {"role": "agent", "text": "Thanks, I can see the order. How can I help?"},
    ]
    response = http.post(PATH, json={"message": "yes", "conversation_history": history})
    assert response.status_code == 200
    assert response.json()["top_intent"] in LABELS
    # Same message, no history: both answer; the history is accepted at its limits too.
    long_history = [{"role": "customer", "text": "x" * 2048}] * 50
    response = http.post(PATH, json={"message": "yes", "conversation_history": long_history})
    assert response.status_code == 200, response.text


def test_classify_message_of_2048_chars_is_accepted(http: httpx.Client) -> None:
    response = http.post(PATH, json={"message": "a" * 2048})
    assert response.status_code == 200, response.text
    assert response.json()["message"] == "a" * 2048


def test_classify_message_of_2049_chars_is_422(http: httpx.Client) -> None:
    body = assert_error(http.post(PATH, json={"message": "a" * 2049}), 422, "MESSAGE_TOO_LONG")
    assert "message" in body["message"] and "2048" in body["message"]


def test_classify_history_turn_of_2049_chars_is_422_naming_the_turn(http: httpx.Client) -> None:
    history = [{"role": "customer", "text": "hi"}, {"role": "agent", "text": "b" * 2049}]
    response = http.post(PATH, json={"message": "ok", "conversation_history": history})
    body = assert_error(response, 422, "MESSAGE_TOO_LONG")
    assert "conversation_history[1].text" in body["message"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "message"),
        ({"message": 42}, "message"),
        ({"message": None}, "message"),
        ({"message": "hi", "top_k": 0}, "top_k"),
        ({"message": "hi", "top_k": 6}, "top_k"),
        ({"message": "hi", "top_k": "3"}, "top_k"),
        ({"message": "hi", "top_k": 2.5}, "top_k"),
        ({"message": "hi", "threshold": 1.01}, "threshold"),
        ({"message": "hi", "threshold": -0.01}, "threshold"),
        ({"message": "hi", "threshold": "high"}, "threshold"),
        ({"message": "hi", "conversation_history": [{"role": "bot", "text": "x"}]}, "role"),
        ({"message": "hi", "conversation_history": [{"role": "agent"}]}, "text"),
        ({"message": "hi", "conversation_history": "earlier"}, "conversation_history"),
        (
            {"message": "hi", "conversation_history": [{"role": "agent", "text": "x"}] * 51},
            "conversation_history",
        ),
    ],
)
def test_classify_invalid_field_is_400_naming_it(
    http: httpx.Client, payload: dict, field: str
) -> None:
    body = assert_error(http.post(PATH, json=payload), 400, "INVALID_REQUEST")
    assert field in body["message"]


@pytest.mark.parametrize("top_k", [1, 5])
def test_classify_top_k_bounds_are_accepted(http: httpx.Client, top_k: int) -> None:
    response = http.post(PATH, json={"message": "hi", "top_k": top_k})
    assert response.status_code == 200
    assert len(response.json()["predictions"]) == top_k


@pytest.mark.parametrize(
    "raw", [b"{not json", b"", b"[1, 2]", b'"message"', b'{"message": "unterminated']
)
def test_classify_malformed_body_is_400(http: httpx.Client, raw: bytes) -> None:
    response = http.post(PATH, content=raw, headers={"content-type": "application/json"})
    body = assert_error(response, 400, "INVALID_REQUEST")
    assert "detail" not in body


def test_classify_too_long_and_invalid_together_is_400(http: httpx.Client) -> None:
    response = http.post(PATH, json={"message": "a" * 3000, "top_k": 9})
    assert_error(response, 400, "INVALID_REQUEST")


def test_classify_confidences_are_finite_numbers(http: httpx.Client) -> None:
    body = http.post(PATH, json={"message": "¿Dónde está mi pedido? 📦", "top_k": 5}).json()
    assert all(math.isfinite(p["confidence"]) for p in body["predictions"])


@pytest.mark.parametrize(("top_k", "status"), [(2.0, 200), (2.5, 400), ("2", 400), (True, 400)])
def test_top_k_is_an_integer_as_json_schema_counts_them(
    http: httpx.Client, top_k: object, status: int
) -> None:
    response = http.post(PATH, json={"message": "cancel my order please", "top_k": top_k})
    assert response.status_code == status, response.text
    if status == 200:
        assert len(response.json()["predictions"]) == 2
