"""The inference routes of the HTTP front: validate, rate-limit, classify, shape the answer.

Bodies are parsed here rather than by FastAPI so that authentication (a router dependency)
always runs first, and so that a too-long message becomes 422 ``MESSAGE_TOO_LONG`` while
every other problem is 400 ``INVALID_REQUEST``; FastAPI's own error bodies never escape.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from core.errors import ApiError, describe_validation_errors
from core.request_context import get_request_id
from intent.text_format import format_input
from serving.inference_metrics import INFERENCE_LATENCY, PREDICTIONS
from serving.protocol import (
    BatchResult,
    Classifier,
    ClassifierOverloaded,
    ClassifierUnavailable,
    TextPair,
)
from serving.schemas import (
    MAX_MESSAGE_CHARS,
    BatchClassifyRequest,
    BatchClassifyResponse,
    ErrorResponse,
    IntentClassifyRequest,
    IntentClassifyResponse,
)

log = logging.getLogger(__name__)

# Seconds a client should wait: a full queue drains in about one; a lost model takes Serve a
# few seconds to replace.
OVERLOAD_RETRY_AFTER_S = 1
UNAVAILABLE_RETRY_AFTER_S = 5

SINGLE_PATH = "/inference/intent-classify"
BATCH_PATH = "/inference/intent-classify/batch"

Body = TypeVar("Body", bound=BaseModel)


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": description}
    for status, description in {
        400: "INVALID_REQUEST: malformed body, wrong types, values out of range",
        401: "UNAUTHORIZED: missing, malformed, unknown or revoked API token",
        422: "MESSAGE_TOO_LONG: a message or history turn over 2048 characters",
        429: "RATE_LIMITED: per-token limit reached; see Retry-After",
        500: "INTERNAL_ERROR: unexpected failure; quote the request_id",
    }.items()
}


# A body the route parses itself is documented by reference; the schemas it names travel
# under this key, which the front's document moves to its components (switchyard/openapi.py).
SCHEMA_REF = "#/components/schemas/{model}"
COMPONENT_SCHEMAS_KEY = "x-component-schemas"


def _request_body(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI of a body the route parses itself: a reference to the model's named schema,
    brought along with the schemas it uses."""
    schema = model.model_json_schema(ref_template=SCHEMA_REF)
    schemas = {**schema.pop("$defs", {}), model.__name__: schema}
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": SCHEMA_REF.format(model=model.__name__)}}
            },
        },
        COMPONENT_SCHEMAS_KEY: schemas,
    }


def _field_name(loc: Sequence[Any], body: Any) -> str:
    """``conversation_history[2].text`` or ``messages[4] (id "a1").message`` for an error loc."""
    name = ""
    for part in loc:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    if len(loc) >= 2 and loc[0] == "messages" and isinstance(loc[1], int):
        with contextlib.suppress(KeyError, IndexError, TypeError):
            name += f' (id "{body["messages"][loc[1]]["id"]}")'
    return name


def _is_message_too_long(error: Any) -> bool:
    """Over-long text to classify (a message or a history turn), not e.g. an over-long id."""
    loc = error["loc"]
    return error["type"] == "string_too_long" and bool(loc) and loc[-1] in ("message", "text")


def parse_body(model: type[Body], raw: bytes) -> Body:
    """Validate a JSON body; raise the contract's 400 or 422 ``ApiError``."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
    if any(err["type"] == "json_invalid" for err in errors):
        raise ApiError(400, "INVALID_REQUEST", "request body is not valid JSON")
    too_long = [err for err in errors if _is_message_too_long(err)]
    others = [err for err in errors if not _is_message_too_long(err)]
    if others:
        for err in others:
            if err["type"] == "value_error":
                # The message of our own validators (duplicate ids) reads better bare.
                err["msg"] = str(err.get("ctx", {}).get("error", err["msg"]))
        raise ApiError(400, "INVALID_REQUEST", describe_validation_errors(others))
    try:  # parsed again only on this error path, to name the offending entry's id
        body = json.loads(raw)
    except ValueError:
        body = None
    names = [_field_name(err["loc"], body) for err in too_long]
    raise ApiError(
        422,
        "MESSAGE_TOO_LONG",
        f"{', '.join(names)} exceeds {MAX_MESSAGE_CHARS} characters",
    )


def _ranked(probabilities: np.ndarray, labels: Sequence[str]) -> list[tuple[str, float]]:
    """(intent, confidence), most confident first; ties keep the labels' order."""
    # Plain floats and a stable sort: for ten values, several times cheaper than argsort.
    values: list[float] = probabilities.tolist()
    order = sorted(range(len(values)), key=values.__getitem__, reverse=True)
    return [(labels[i], values[i]) for i in order]


def _predictions(ranked: list[tuple[str, float]], top_k: int, threshold: float) -> list[dict]:
    return [
        {"intent": intent, "confidence": confidence}
        for intent, confidence in ranked[:top_k]
        if confidence >= threshold
    ]


async def _classify(
    classifier: Classifier, pairs: Sequence[TextPair], endpoint: str
) -> tuple[np.ndarray, tuple[str, ...], str, int]:
    """Probabilities for every pair, labels, model version and latency in milliseconds."""
    started = time.perf_counter()
    try:
        results: list[BatchResult] = await classifier.classify(pairs)
    except ClassifierOverloaded as exc:
        log.warning("inference shed request_id=%s: %s", get_request_id(), exc)
        raise ApiError(
            503,
            "SERVICE_UNAVAILABLE",
            "the model is at capacity; retry shortly",
            headers={"Retry-After": str(OVERLOAD_RETRY_AFTER_S)},
        ) from exc
    except ClassifierUnavailable as exc:
        log.error("inference failed request_id=%s: %s", get_request_id(), exc)
        raise ApiError(
            503,
            "SERVICE_UNAVAILABLE",
            "the model cannot be reached right now; retry shortly "
            "(quote the request_id when reporting it)",
            headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)},
        ) from exc
    elapsed = time.perf_counter() - started
    INFERENCE_LATENCY.labels(endpoint).observe(elapsed)
    probabilities = (
        results[0].probabilities
        if len(results) == 1
        else np.concatenate([r.probabilities for r in results])
    )
    return probabilities, results[0].labels, results[0].model_version, round(elapsed * 1000)


def _count_predictions(top_intents: Sequence[str]) -> None:
    for intent, count in Counter(top_intents).items():
        PREDICTIONS.labels(intent).inc(count)


async def answer_single(classifier: Classifier, raw: bytes) -> dict[str, Any]:
    """The answer to one message's request body (raises the contract's ``ApiError``)."""
    body = parse_body(IntentClassifyRequest, raw)
    history = (
        [turn.model_dump() for turn in body.conversation_history]
        if body.conversation_history
        else None
    )
    pair = format_input(body.message, history)
    probabilities, labels, version, latency_ms = await _classify(classifier, [pair], SINGLE_PATH)
    ranked = _ranked(probabilities[0], labels)
    _count_predictions([ranked[0][0]])
    return {
        "request_id": get_request_id(),
        "message": body.message,
        "predictions": _predictions(ranked, body.top_k, body.threshold),
        "top_intent": ranked[0][0],
        "latency_ms": latency_ms,
        "model_version": version,
    }


async def answer_batch(classifier: Classifier, raw: bytes) -> dict[str, Any]:
    """The answer to a batch request body (raises the contract's ``ApiError``)."""
    body = parse_body(BatchClassifyRequest, raw)
    pairs = [format_input(entry.message) for entry in body.messages]
    probabilities, labels, version, latency_ms = await _classify(classifier, pairs, BATCH_PATH)
    results = []
    for entry, row in zip(body.messages, probabilities, strict=True):
        ranked = _ranked(row, labels)
        item: dict[str, Any] = {
            "id": entry.id,
            "top_intent": ranked[0][0],
            "confidence": ranked[0][1],
        }
        if body.top_k > 1:
            item["predictions"] = _predictions(ranked, body.top_k, 0.0)
        results.append(item)
    _count_predictions([item["top_intent"] for item in results])
    return {
        "request_id": get_request_id(),
        "results": results,
        "latency_ms": latency_ms,
        "model_version": version,
    }


def render(answer: dict[str, Any]) -> bytes:
    """An answer as the JSON bytes both ways of serving it send."""
    return to_json(answer)


# Path (under /v1) -> what answers it, for the front's direct way in (switchyard).
ANSWERS = {SINGLE_PATH: answer_single, BATCH_PATH: answer_batch}


class _Rendered(Response):
    media_type = "application/json"


def build_inference_router(*, classifier: Classifier) -> APIRouter:
    """The two inference routes, to mount under ``/v1`` behind the API-token dependency with
    the ``RateLimiter`` as its admission check."""
    router = APIRouter(tags=["Inference"])

    @router.post(
        SINGLE_PATH,
        summary="Classify one customer-support message",
        response_model=IntentClassifyResponse,
        responses=_ERRORS,
        openapi_extra=_request_body(IntentClassifyRequest),
    )
    async def classify_intent(request: Request) -> Response:
        return _Rendered(render(await answer_single(classifier, await request.body())))

    @router.post(
        BATCH_PATH,
        summary="Classify up to 100 messages",
        response_model=BatchClassifyResponse,
        response_model_exclude_none=True,
        responses=_ERRORS,
        openapi_extra=_request_body(BatchClassifyRequest),
    )
    async def classify_intents_batch(request: Request) -> Response:
        return _Rendered(render(await answer_batch(classifier, await request.body())))

    return router
