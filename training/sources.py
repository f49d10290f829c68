"""Load the training sources as rows ``{message, conversation_history, label, group, source}``.

Three sources: the project's own corpus (``training/data/corpus.jsonl``, built by
``training.build_corpus``), the project's hand-written messages (``training/data/written/``:
every row its own message, no templates; ``languages/*.jsonl`` hold rows in six other languages,
tagged ``language``, rows without it are English) and the Bitext customer-support data, read from a
local CSV (by default the sample kept in ``training/data/bitext/``) or, when a network exists,
from the Hugging Face Hub. ``BITEXT_MAPPING`` maps Bitext's 27
intents onto our ten; intents in ``BITEXT_DROPPED`` are left out (see docs/model.md).
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from intent.evaluation import read_rows
from intent.evaluation import sha256_file as sha256_file  # recorded in the model card
from training.labels import LABELS

CORPUS_PATH = Path(__file__).parent / "data" / "corpus.jsonl"
WRITTEN_DIR = Path(__file__).parent / "data" / "written"
# The one definition of the default Bitext source: kept in the repository (with its license)
# so a fresh clone trains, evaluates and tests with nothing beside it.
BITEXT_SAMPLE = Path(__file__).parent / "data" / "bitext" / "bitext_customer_support_train.csv"
BITEXT_HUB_ID = "bitext/Bitext-customer-support-llm-chatbot-training-dataset"

BITEXT_MAPPING: dict[str, str] = {
    "track_order": "track_order",
    "delivery_period": "track_order",  # "how soon can I expect my package"
    "cancel_order": "cancel_order",
    "get_refund": "refund_request",
    "track_refund": "refund_request",
    "check_refund_policy": "refund_request",
    "change_shipping_address": "change_address",
    "set_up_shipping_address": "change_address",
    "payment_issue": "payment_issue",
    "complaint": "complaint",
    # Invoices and receipts are billing documents: payment_issue (docs/label-guide.md, rule 5).
    "check_invoice": "payment_issue",
    "get_invoice": "payment_issue",
    # Account, contact, newsletter and shipping-coverage questions are all "other".
    "create_account": "other",
    "delete_account": "other",
    "edit_account": "other",
    "recover_password": "other",
    "registration_problems": "other",
    "switch_account": "other",
    "contact_customer_service": "other",
    "contact_human_agent": "other",
    "newsletter_subscription": "other",
    "delivery_options": "other",
}
# Intents whose meaning straddles our labels; training on them would teach contradictions.
BITEXT_DROPPED: dict[str, str] = {
    "review": "leaving a review is neither praise (compliment) nor a complaint",
    "check_payment_methods": "a pre-purchase question, not a payment problem",
    "change_order": "editing items of an order has no label of its own",
    "place_order": "buying help; neither product_inquiry nor other fits cleanly",
    "check_cancellation_fee": "about account/subscription termination fees, not orders",
}
# Bitext is heavy on "other" (account, contact...) and refunds; cap it so classes stay balanced.
BITEXT_CAP_PER_LABEL = 450

_PLACEHOLDER = re.compile(r"\{\{\s*([^}]+?)\s*\}\}")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file in the evaluation format (history optional), labels checked."""
    return read_rows(path, LABELS)


def write_jsonl(rows: Iterable[dict[str, Any]], path: Path) -> None:
    """Write rows in the evaluation format plus their group and source."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def load_corpus(path: Path = CORPUS_PATH) -> list[dict[str, Any]]:
    """The project's own corpus, tagged ``source="corpus"``."""
    rows = read_jsonl(path)
    for row in rows:
        row["source"] = "corpus"
    return rows


def written_files(directory: Path = WRITTEN_DIR) -> list[Path]:
    """The hand-written JSONL files in a fixed order: ``*.jsonl``, then ``languages/*.jsonl``."""
    directory = Path(directory)
    return sorted(directory.glob("*.jsonl")) + sorted(directory.glob("languages/*.jsonl"))


def load_written(directory: Path = WRITTEN_DIR) -> list[dict[str, Any]]:
    """Hand-written rows, tagged ``source="written"``; each row is a group of its own.

    Group ids name the file relative to ``directory`` (``written:other.dialogues:4``,
    ``written:languages/de:3``), so they stay unique across subfolders. A row's ``language``
    key, when the file has one, is kept; rows without it are English.
    """
    directory = Path(directory)
    rows: list[dict[str, Any]] = []
    for path in written_files(directory):
        name = path.relative_to(directory).with_suffix("").as_posix()
        for i, row in enumerate(read_jsonl(path)):
            row["source"] = "written"
            row["group"] = f"written:{name}:{i}"
            rows.append(row)
    return rows


def sha256_files(paths: Iterable[Path]) -> str:
    """One digest over several files (names and contents), for the model card."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _fill_placeholders(text: str, rng: random.Random) -> str:
    """Replace ``{{Order Number}}``-style placeholders with plausible values."""

    def repl(match: re.Match[str]) -> str:
        name = match.group(1).lower()
        if "order" in name or "number" in name:
            return str(rng.randint(10000, 99999999))
        if "amount" in name or "money" in name:
            return f"${rng.randint(5, 900)}"
        if "address" in name:
            return rng.choice(["12 Elm Street", "Flat 4, 9 Hill Road", "77 Lake Ave"])
        if "name" in name or "person" in name:
            return rng.choice(["Alex", "Sam", "Jordan"])
        return rng.choice(["it", "the site", "the app"])

    return _PLACEHOLDER.sub(repl, text)


def bitext_rows_from_records(
    records: Iterable[dict[str, str]], seed: int = 13
) -> list[dict[str, Any]]:
    """Map Bitext records (``instruction``, ``intent``) onto our labels, capped per label."""
    rng = random.Random(seed)
    by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        label = BITEXT_MAPPING.get(record["intent"])
        if label is None:
            continue
        text = _fill_placeholders(record["instruction"].strip(), rng)
        if not text:
            continue
        by_label[label].append(
            {
                "message": text,
                "conversation_history": [],
                "label": label,
                "source": "bitext",
                "bitext_intent": record["intent"],
            }
        )
    rows: list[dict[str, Any]] = []
    for label in sorted(by_label):
        items = by_label[label]
        if len(items) > BITEXT_CAP_PER_LABEL:
            # Round-robin over sub-intents so every mapped intent stays represented.
            per_intent: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for item in items:
                per_intent[item["bitext_intent"]].append(item)
            for bucket in per_intent.values():
                rng.shuffle(bucket)
            picked: list[dict[str, Any]] = []
            while len(picked) < BITEXT_CAP_PER_LABEL:
                for intent in sorted(per_intent):
                    if per_intent[intent] and len(picked) < BITEXT_CAP_PER_LABEL:
                        picked.append(per_intent[intent].pop())
            items = picked
        rows.extend(items)
    return rows


def load_bitext_csv(path: Path, seed: int = 13) -> list[dict[str, Any]]:
    """Bitext rows from a local CSV with ``instruction`` and ``intent`` columns."""
    with path.open(encoding="utf-8", newline="") as fh:
        return bitext_rows_from_records(csv.DictReader(fh), seed)


def download_bitext_from_hub(cache_dir: Path | None = None) -> Path:
    """Fetch the Hub dataset's CSV (needs a network; raises when offline)."""
    from huggingface_hub import hf_hub_download, list_repo_files

    files = [f for f in list_repo_files(BITEXT_HUB_ID, repo_type="dataset") if f.endswith(".csv")]
    if not files:
        raise FileNotFoundError(f"no CSV file in the Hub dataset {BITEXT_HUB_ID}")
    return Path(hf_hub_download(BITEXT_HUB_ID, files[0], repo_type="dataset", cache_dir=cache_dir))


def resolve_bitext(source: str | None) -> Path | None:
    """A local CSV path as given, ``"hub"`` to download; None, ``""`` or ``"none"``: no Bitext."""
    # "none" because the command line cannot pass None once the option has a default.
    if not source or source.lower() == "none":
        return None
    if source == "hub":
        return download_bitext_from_hub()
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"Bitext CSV not found: {path}")
    return path
