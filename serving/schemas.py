"""Request and response bodies of the inference endpoints (the contract's field rules)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    field_validator,
)

from serving.label_guide import INTENT_LABELS_SUMMARY

MAX_MESSAGE_CHARS = 2048
MAX_HISTORY_TURNS = 50
MAX_BATCH_MESSAGES = 100
MAX_TOP_K = 5

# Strict: a number is not a message and "3" is not a top_k (JSON numbers still fill floats).
_STRICT = ConfigDict(strict=True)


def _integral(value: Any) -> Any:
    # JSON Schema counts 2.0 as an integer; so does the API. 2.5 and "2" stay refused.
    return int(value) if isinstance(value, float) and value.is_integer() else value


TopK = Annotated[StrictInt, BeforeValidator(_integral)]


class ConversationTurn(BaseModel):
    """One earlier turn of the conversation."""

    model_config = _STRICT
    role: Literal["customer", "agent"] = Field(description="Who wrote the turn.")
    text: StrictStr = Field(max_length=MAX_MESSAGE_CHARS, description="What was written.")


class IntentClassifyRequest(BaseModel):
    """Classify one message, optionally in the context of earlier turns."""

    model_config = ConfigDict(
        strict=True,
        json_schema_extra={
            "examples": [
                {"message": "where is my parcel? order #A1234 still not here", "top_k": 3},
                {
                    "message": "ok, then I want my money back",
                    "conversation_history": [
                        {"role": "customer", "text": "the jacket I got is torn at the sleeve"},
                        {"role": "agent", "text": "Sorry about that! A replacement or a refund?"},
                    ],
                    "top_k": 2,
                    "threshold": 0.1,
                },
            ]
        },
    )
    message: StrictStr = Field(max_length=MAX_MESSAGE_CHARS, description="Message to classify.")
    conversation_history: list[ConversationTurn] | None = Field(
        default=None,
        max_length=MAX_HISTORY_TURNS,
        description="Prior turns, oldest first, for context (at most 50).",
    )
    top_k: TopK = Field(default=1, ge=1, le=MAX_TOP_K, description="Intents to return.")
    threshold: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Minimum confidence for a prediction to be included.",
    )


class IntentPrediction(BaseModel):
    intent: str = Field(description=INTENT_LABELS_SUMMARY)
    confidence: float = Field(ge=0.0, le=1.0, description="Calibrated probability.")


class IntentClassifyResponse(BaseModel):
    request_id: str
    message: str = Field(description="The classified message, as sent.")
    predictions: list[IntentPrediction] = Field(
        description="At most top_k predictions at or above threshold, most confident first."
    )
    top_intent: str = Field(
        description=f"The most confident intent, even if below threshold. {INTENT_LABELS_SUMMARY}"
    )
    latency_ms: int = Field(description="Server-side inference time in milliseconds.")
    model_version: str


class BatchMessage(BaseModel):
    """One message of a batch, with the id its result comes back under."""

    model_config = _STRICT
    id: StrictStr = Field(min_length=1, max_length=256, description="Caller-chosen, unique.")
    message: StrictStr = Field(max_length=MAX_MESSAGE_CHARS, description="Message to classify.")


class BatchClassifyRequest(BaseModel):
    """Classify up to 100 messages in one request."""

    model_config = ConfigDict(
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "messages": [
                        {
                            "id": "t-1001",
                            "message": "where is my parcel? order #A1234 still not here",
                        },
                        {"id": "t-1002", "message": "can I change the delivery address?"},
                        {
                            "id": "t-1003",
                            "message": "the shoes are too small, how do I return them",
                        },
                    ],
                    "top_k": 1,
                }
            ]
        },
    )
    messages: list[BatchMessage] = Field(
        min_length=1, max_length=MAX_BATCH_MESSAGES, description="1 to 100 messages."
    )
    top_k: TopK = Field(default=1, ge=1, le=MAX_TOP_K, description="Intents to return.")

    @field_validator("messages")
    @classmethod
    def _unique_ids(cls, messages: list[BatchMessage]) -> list[BatchMessage]:
        seen: set[str] = set()
        for entry in messages:
            if entry.id in seen:
                raise ValueError(f"duplicate id {entry.id!r}: ids must be unique in a request")
            seen.add(entry.id)
        return messages


class BatchResultItem(BaseModel):
    id: str
    top_intent: str = Field(description=f"The most confident intent. {INTENT_LABELS_SUMMARY}")
    confidence: float = Field(description="Confidence of top_intent.")
    predictions: list[IntentPrediction] | None = Field(
        default=None, description="Present when top_k > 1: as in the single endpoint."
    )


class BatchClassifyResponse(BaseModel):
    request_id: str
    results: list[BatchResultItem] = Field(description="One per message, in request order.")
    latency_ms: int
    model_version: str


class ErrorResponse(BaseModel):
    error: str = Field(description="Error code, e.g. INVALID_REQUEST.")
    message: str
    request_id: str
