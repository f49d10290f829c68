"""What ONNX Runtime loads for a model file: the stored graph, rewritten where this CPU or
ONNX Runtime's kernels need it, with the stored graph's results.

- ``int8_kernels``: int8 weights served unsigned where the signed kernel clips;
- ``attention_mask``: padding's attention scores filled with a value Softmax handles at speed.
"""

from __future__ import annotations

import onnx

from intent import int8_kernels
from intent.attention_mask import with_fast_mask_fill


def session_source(path: str) -> str | bytes:
    """What to give ``ort.InferenceSession`` for the model at ``path``: the path when no
    rewrite applies, else the rewritten model as bytes."""
    model = onnx.load(path)
    changed = with_fast_mask_fill(model)
    if int8_kernels.saturates_signed_weights() and int8_kernels.with_unsigned_weights(model):
        # The replaced int8 initializers are left unread; drop them so memory is not doubled.
        read = {name for node in model.graph.node for name in node.input}
        kept = [init for init in model.graph.initializer if init.name in read]
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept)
        changed += 1
    return model.SerializeToString() if changed else path
