"""The shipped model answers obvious messages the obvious way."""

from __future__ import annotations

from collections import Counter

import httpx
import pytest

pytestmark = [pytest.mark.db]

BATCH = "/inference/intent-classify/batch"

OBVIOUS = {
    "track_order": [
        "Where is my order? It still hasn't arrived.",
        "Can you tell me the tracking status of my package?",
        "When will my parcel be delivered?",
    ],
    "cancel_order": [
        "Please cancel my order, I don't want it anymore.",
        "I need to cancel the order I placed this morning.",
        "How do I cancel my purchase before it ships?",
    ],
    "return_item": [
        "I want to return the shoes I bought, they don't fit.",
        "How do I send back an item I received?",
        "Can I get a return label for this jacket?",
    ],
    "refund_request": [
        "I want my money back for this order.",
        "When will I receive the refund for my returned item?",
        "Please refund me, the product was never delivered.",
    ],
    "product_inquiry": [
        "Is this laptop available in silver?",
        "What sizes does this dress come in?",
        "Does this blender come with a warranty?",
    ],
    "change_address": [
        "I need to change the shipping address on my order.",
        "Please update my delivery address to 12 Oak Street.",
        "I moved, can you send my package to my new address?",
    ],
    "payment_issue": [
        "My credit card was declined at checkout.",
        "I was charged twice for the same order.",
        "The payment failed but money left my account.",
    ],
    "complaint": [
        "This is the worst service I have ever had, I'm furious.",
        "The product arrived broken and nobody answers my emails. Unacceptable.",
        "I am very unhappy with how rude your staff was.",
    ],
    "compliment": [
        "Thank you so much, your support team was amazing!",
        "Great service, the delivery was super fast. Love it!",
        "I really appreciate your help, you were wonderful.",
    ],
    # "other": support topics outside orders and payments (accounts, stores, jobs).
    "other": [
        "How do I reset the password for my account?",
        "Do you have a job opening in marketing?",
        "Are your stores open on Sundays?",
    ],
}


def test_obvious_messages_get_their_intent(http: httpx.Client) -> None:
    entries = [
        {"id": f"{label}:{i}", "message": message}
        for label, messages in OBVIOUS.items()
        for i, message in enumerate(messages)
    ]
    results = http.post(BATCH, json={"messages": entries}).json()["results"]
    correct = Counter(
        r["id"].split(":")[0] for r in results if r["id"].startswith(r["top_intent"] + ":")
    )
    wrong = [
        (r["id"], r["top_intent"]) for r in results if not r["id"].startswith(r["top_intent"] + ":")
    ]
    # Every label gets most of its obvious messages right, and nearly all are right overall.
    assert all(correct[label] >= 2 for label in OBVIOUS), wrong
    assert sum(correct.values()) >= 0.9 * len(entries), wrong
