"""The ten intent labels in one sentence each: the summary of docs/label-guide.md that the
OpenAPI document gives with ``intent`` and ``top_intent``.

The label guide is the definition; this summary follows it (``tests/test_label_guide.py``
holds the two together and checks every label of the model has its clause here).
"""

from __future__ import annotations

LABEL_GUIDE = "docs/label-guide.md"

# Label order as the model's logits (training/labels.py); one short clause each.
LABEL_CLAUSES: dict[str, str] = {
    "track_order": "where an order or parcel is, when it arrives",
    "cancel_order": "stop or cancel an order, an item of it or a pre-order",
    "return_item": "send goods back, exchange or replace them, even with a refund to follow",
    "refund_request": "money back for goods or fees, or where a refund is",
    "product_inquiry": "a product's size, fit, stock, compatibility or warranty",
    "change_address": "change where or how an existing order is delivered",
    "payment_issue": (
        "charges, declined or failed payments, and invoices, receipts and billing documents"
    ),
    "complaint": "dissatisfaction with no concrete ask",
    "compliment": "praise or thanks with no ask",
    "other": "account and login, shop questions, greetings, anything else",
}

INTENT_LABELS_SUMMARY = (
    "One of the ten intent labels: the customer's primary ask, read from the latest message "
    "(the history is context). "
    + "; ".join(f"`{label}`: {clause}" for label, clause in LABEL_CLAUSES.items())
    + f". Definitions, boundaries and examples: {LABEL_GUIDE}."
)
