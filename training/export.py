"""Export the fine-tuned model to ONNX (fp32), then dynamic int8 quantization."""

from __future__ import annotations

from pathlib import Path
from typing import Any

INPUT_NAMES = ["input_ids", "attention_mask", "token_type_ids"]
ONNX_FILE = "model.onnx"  # int8; the name serving loads


def export_onnx(model: Any, path: Path, opset: int = 17) -> Path:
    """Trace the classifier to ONNX with dynamic batch and sequence axes."""
    import torch

    model.eval()
    dummy = tuple(torch.ones((2, 16), dtype=torch.long) for _ in INPUT_NAMES)
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUT_NAMES}
    axes["logits"] = {0: "batch"}
    path.parent.mkdir(parents=True, exist_ok=True)

    with torch.inference_mode():
        torch.onnx.export(
            model,
            dummy,
            str(path),
            input_names=INPUT_NAMES,
            output_names=["logits"],
            dynamic_axes=axes,
            opset_version=opset,
            dynamo=False,
            do_constant_folding=True,
        )
    return path


def quantize_int8(fp32_path: Path, int8_path: Path) -> Path:
    """Dynamic int8 quantization of the MatMul/Gemm weights (activations stay float)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    int8_path.parent.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(fp32_path), str(int8_path), weight_type=QuantType.QInt8)
    return int8_path
