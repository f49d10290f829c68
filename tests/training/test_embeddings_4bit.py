"""A word-embedding table that is exactly 4-bit is stored as its 4-bit blocks, losslessly."""

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from training.export import exact_q4_blocks, pack_embeddings_4bit


def _q4_table(rows: int, width: int, seed: int = 0) -> np.ndarray:
    """Values as Q4_0 stores them: (q - 8) * an fp16 scale per block of 32, -8 in each block."""
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 16, (rows, width // 32, 32))
    q[..., 5] = 0  # the block's largest magnitude, which sets its scale
    scale = rng.uniform(0.001, 0.05, (rows, width // 32, 1)).astype(np.float16)
    return ((q - 8) * scale.astype(np.float32)).reshape(rows, width).astype(np.float32)


def _gather_model(table: np.ndarray) -> onnx.ModelProto:
    node = helper.make_node(
        "Gather", ["word_embeddings.weight", "ids"], ["out"], name="word_embeddings/Gather"
    )
    graph = helper.make_graph(
        [node],
        "embeddings",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "sequence"])],
        [
            helper.make_tensor_value_info(
                "out", TensorProto.FLOAT, ["batch", "sequence", table.shape[1]]
            )
        ],
        [numpy_helper.from_array(table, "word_embeddings.weight")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_an_exact_4bit_table_packs_into_half_a_byte_per_value():
    table = _q4_table(50, 64)
    blocks = exact_q4_blocks(table)
    assert blocks is not None
    packed, scale = blocks
    assert packed.shape == (50, 2, 16) and packed.dtype == np.uint8
    assert scale.shape == (50, 2, 1) and scale.dtype == np.float16
    low, high = packed & 0x0F, packed >> 4
    values = (np.concatenate([low, high], axis=-1).astype(np.float32) - 8) * scale.astype(
        np.float32
    )
    assert np.array_equal(values.reshape(50, 64), table)


def test_a_table_that_is_not_4bit_is_left_alone():
    table = _q4_table(50, 64)
    table[3, 7] += 1e-3  # one value off the grid
    assert exact_q4_blocks(table) is None
    assert exact_q4_blocks(np.ones((4, 48), dtype=np.float32)) is None  # not blocks of 32


def test_the_packed_graph_gives_exactly_the_rows_of_the_table(tmp_path):
    table = _q4_table(300, 96)
    table[7] = 0.0  # an all-zero row (scale 0) survives too
    path = tmp_path / "model.onnx"
    onnx.save(_gather_model(table), str(path))

    assert pack_embeddings_4bit(path) == 1

    ids = np.array([[0, 7, 299, 42], [1, 1, 2, 3]], dtype=np.int64)
    (out,) = ort.InferenceSession(str(path)).run(None, {"ids": ids})
    assert np.array_equal(out, table[ids])
    assert path.stat().st_size < table.nbytes / 6  # 4 bits plus a 16-bit scale per 32 values
