"""POST /v1/inference/intent-classify/batch over real HTTP (the model runs in-process)."""

from __future__ import annotations

import httpx
import pytest

from tests.assertions import assert_error

pytestmark = [pytest.mark.db]

PATH = "/inference/intent-classify/batch"
SINGLE = "/inference/intent-classify"


def _entries(n: int, text: str = "where is my order {i}") -> list[dict[str, str]]:
    return [{"id": f"m{i}", "message": text.format(i=i)} for i in range(n)]


def test_batch_of_100_answers_in_request_order(http: httpx.Client, model_version: str) -> None:
    entries = _entries(100)
    response = http.post(PATH, json={"messages": entries})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"request_id", "results", "latency_ms", "model_version"}
    assert body["request_id"] == response.headers["x-request-id"]
    assert body["model_version"] == model_version
    assert isinstance(body["latency_ms"], int)
    assert [r["id"] for r in body["results"]] == [e["id"] for e in entries]
    for result in body["results"]:
        assert set(result) == {"id", "top_intent", "confidence"}
        assert 0.0 < result["confidence"] <= 1.0


def test_batch_results_match_single_endpoint(http: httpx.Client) -> None:
    messages = [
        "I need to cancel the order I placed an hour ago",
        "The delivery address on my order is wrong, please change it",
        "Your support team was wonderful, thank you!",
    ]
    entries = [{"id": str(i), "message": m} for i, m in enumerate(messages)]
    batch = http.post(PATH, json={"messages": entries}).json()["results"]
    for entry, result in zip(entries, batch, strict=True):
        single = http.post(SINGLE, json={"message": entry["message"]}).json()
        assert result["top_intent"] == single["top_intent"]
        # Dynamic int8 quantizes activations per batch, so batch companions move the
        # numbers slightly; the answer itself must not change.
        single_confidence = single["predictions"][0]["confidence"]
        assert result["confidence"] == pytest.approx(single_confidence, abs=0.05)


def test_batch_top_k_above_one_adds_predictions(http: httpx.Client) -> None:
    response = http.post(PATH, json={"messages": _entries(3), "top_k": 3})
    for result in response.json()["results"]:
        assert len(result["predictions"]) == 3
        assert result["predictions"][0]["intent"] == result["top_intent"]
        assert result["predictions"][0]["confidence"] == result["confidence"]
        confidences = [p["confidence"] for p in result["predictions"]]
        assert confidences == sorted(confidences, reverse=True)


def test_batch_single_entry_and_2048_chars_are_accepted(http: httpx.Client) -> None:
    response = http.post(PATH, json={"messages": [{"id": "only", "message": "z" * 2048}]})
    assert response.status_code == 200, response.text
    assert [r["id"] for r in response.json()["results"]] == ["only"]


def test_batch_entry_of_2049_chars_is_422_naming_the_entry(http: httpx.Client) -> None:
    entries = _entries(3)
    entries[1]["message"] = "z" * 2049
    body = assert_error(http.post(PATH, json={"messages": entries}), 422, "MESSAGE_TOO_LONG")
    assert "messages[1]" in body["message"] and "m1" in body["message"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": _entries(101)}, "messages"),
        ({"messages": "hello"}, "messages"),
        ({"messages": [{"id": "a"}]}, "message"),
        ({"messages": [{"message": "hi"}]}, "id"),
        ({"messages": [{"id": 7, "message": "hi"}]}, "id"),
        ({"messages": [{"id": "x" * 257, "message": "hi"}]}, "id"),
        (
            {"messages": [{"id": "a", "message": "x"}, {"id": "a", "message": "y"}]},
            "messages: duplicate id 'a'",
        ),
        ({"messages": _entries(2), "top_k": 0}, "top_k"),
        ({"messages": _entries(2), "top_k": 6}, "top_k"),
    ],
)
def test_batch_invalid_request_is_400_naming_the_problem(
    http: httpx.Client, payload: dict, field: str
) -> None:
    body = assert_error(http.post(PATH, json=payload), 400, "INVALID_REQUEST")
    assert field in body["message"]


def test_batch_malformed_json_is_400(http: httpx.Client) -> None:
    headers = {"content-type": "application/json"}
    response = http.post(PATH, content=b'{"messages": [', headers=headers)
    assert_error(response, 400, "INVALID_REQUEST")
