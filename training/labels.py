"""The closed set of ten intent labels, in the order of the model's output logits."""

from __future__ import annotations

LABELS: list[str] = [
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
]
LABEL_TO_ID: dict[str, int] = {label: i for i, label in enumerate(LABELS)}
