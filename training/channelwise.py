"""Int8 MatMuls with fixed activation scales, one per input channel.

A transformer's activations carry a few outlier channels (this encoder's LayerNorm outputs
reach 13 in some channels while most stay within 1), so one fixed scale per tensor wastes the
int8 levels of every other channel (v7's weights that way: 98.8% agreement with their per-token
graph). Here each input channel of each MatMul gets the range it took over the training
messages, mapped onto uint8 around 128: q = 128 + round((x - middle) / step). The mapping is
undone inside the weights (each weight row multiplied by its channel's step before the weights
are quantized per output column, SmoothQuant with migration strength 1) and the bias (the
middles times the weights, plus a correction for the weights' rounding: without it the
rounding errors add up over channels whose values sit far from their middle).

What runs before each MatMul, by what produces its input (every pass over a tensor costs):

* LayerNorm outputs are centred (their channels carry offsets): one ``BatchNormalization`` over
  a 2-D view does the scaling and the centring in one pass;
* attention contexts get their grid for free from the value projection, whose output channels
  pass through the attention unchanged;
* a feed-forward block's GELU output (the widest tensor) shares one step and zero point, which
  ``QuantizeLinear`` applies itself, except for its ``WIDE_CHANNELS`` widest channels: those
  are moved last (``training/feed_forward.py`` reorders the block's weights), sliced out and
  quantized on steps of their own, and the two parts concatenated (their rows in the second
  MatMul appear twice, zero where the shared step clips them);
* anything else gets a ``Mul`` by its channels' inverse steps.

The attention's ``1 / sqrt(sqrt(head size))`` factors on the queries and keys move into those
projections' weights and biases, so their ``Mul`` goes too.

The scales are constants, so a message's logits depend on nothing but the message (no other
message of a batch, no padding), and no scale is computed at run time: each MatMul runs as one
ONNX Runtime ``MatMulIntegerToFloat`` with its bias.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from training.feed_forward import hidden_activations, reorder_hidden
from training.onnx_graph import bias_add, weight_int8

# uint8 activations around 128: a channel's lowest value is 1, its highest 255. Centred (not
# lowest at 0) so that the weights' rounding errors, multiplied by q - 128, cancel out instead
# of adding up (q alone is always positive).
ZERO_POINT = 128
LEVELS = 254.0
RANGE_FLOOR = 1e-5  # a channel never seen away from zero still gets a usable step
CALIBRATION_BATCH = 64
MICROSOFT_DOMAIN = "com.microsoft"
# Inputs centred on their channels' ranges, by the operator that produces them: LayerNorm
# outputs carry per-channel offsets (their beta); the others are centred on zero.
CENTRED_PRODUCERS = ("LayerNormalization",)
# Channels of a wide activation (GELU outputs) quantized on their own steps; the others share
# one step that QuantizeLinear applies (a step per channel would cost a Mul over the tensor).
WIDE_CHANNELS = 32


def calibration_feeds(
    tokenizer_dir: Path, rows: Sequence[dict[str, Any]], emoji_style: str
) -> list[dict[str, np.ndarray]]:
    """Model inputs for every row, in batches of similar length (padding is masked out of the
    ranges, so it only costs time)."""
    from intent.encoding import encode, load_tokenizer

    tokenizer = load_tokenizer(tokenizer_dir)
    ordered = sorted(rows, key=lambda r: len(r["message"]) + sum(
        len(turn.get("text", "")) for turn in r.get("conversation_history") or []))  # fmt: skip
    return [
        encode(tokenizer, [r["message"] for r in batch],
               [r.get("conversation_history") for r in batch], emoji_style=emoji_style)
        for batch in (ordered[i : i + CALIBRATION_BATCH]
                      for i in range(0, len(ordered), CALIBRATION_BATCH))
    ]  # fmt: skip


def _quantizable(graph: Any, nodes: Sequence[Any]) -> list[tuple[Any, Any]]:
    """(MatMul node, its constant 2-D weight) for every MatMul of ``nodes`` that reads one."""
    weights = {init.name: init for init in graph.initializer}
    found = []
    for node in nodes:
        weight = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if weight is not None and len(weight.dims) == 2:
            found.append((node, weight))
    return found


def channel_ranges(fp32_path: Path, feeds: Iterable[dict[str, np.ndarray]]) -> dict[str, Any]:
    """Lowest value, highest value and mean of each channel of each quantized MatMul's input
    over the real (unpadded) tokens of ``feeds``: ``{input: array [3, channels]}``."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    model = onnx.load(str(fp32_path))
    activations = sorted({node.input[0] for node, _ in _quantizable(model.graph, model.graph.node)})
    probe = copy.deepcopy(model)
    for name in activations:
        probe.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    low: dict[str, np.ndarray] = {}
    high: dict[str, np.ndarray] = {}
    total: dict[str, np.ndarray] = {}
    tokens = 0
    for feed in feeds:
        real = feed["attention_mask"].astype(bool)
        tokens += int(real.sum())
        values = session.run(activations, {k: v for k, v in feed.items() if k in inputs})
        for name, value in zip(activations, values, strict=True):
            seen = value[real].astype(np.float64)
            if name not in low:
                low[name], high[name], total[name] = seen.min(0), seen.max(0), seen.sum(0)
                continue
            low[name] = np.minimum(low[name], seen.min(0))
            high[name] = np.maximum(high[name], seen.max(0))
            total[name] += seen.sum(0)
    if not tokens:
        raise ValueError("channel_ranges needs at least one calibration token")
    return {name: np.stack([low[name], high[name], total[name] / tokens]) for name in low}


def _single_reader(nodes: Sequence[Any], name: str) -> bool:
    return sum(name in node.input for node in nodes) == 1


def _value_projection(
    activation: str, nodes: Sequence[Any], producers: dict[str, Any], initializers: dict[str, Any]
) -> Any | None:
    """The MatMul whose output channels become ``activation``'s channels unchanged, when
    ``activation`` is an attention context: Reshape(Transpose(MatMul(Softmax(...),
    Transpose(Reshape(x @ W_value + bias))))). Softmax rows sum to 1, so an affine map of the
    value channels passes through to the context exactly."""
    if any(node.op_type != "MatMul" for node in nodes if activation in node.input):
        return None  # something besides the quantized MatMuls reads the context
    path = [("Reshape", 0), ("Transpose", 0), ("MatMul", 1), ("Transpose", 0), ("Reshape", 0)]
    name = activation
    for op_type, follow in path:
        node = producers.get(name)
        if node is None or node.op_type != op_type:
            return None
        probabilities = producers.get(node.input[0])
        if op_type == "MatMul" and getattr(probabilities, "op_type", "") != "Softmax":
            return None
        name = node.input[follow]
        if not _single_reader(nodes, name):
            return None
    for candidate in getattr(producers.get(name), "input", []):
        value = producers.get(candidate)
        if value is None or value.op_type != "MatMul" or value.input[1] not in initializers:
            continue
        bias = bias_add(nodes, value.output[0], initializers)
        if bias is not None and bias[0].output[0] == name:
            return value
    return None


def _projection_output(nodes: Sequence[Any], matmul: Any, initializers: dict[str, Any]) -> str:
    """A MatMul's output, or its bias Add's where it has one."""
    bias = bias_add(nodes, matmul.output[0], initializers)
    return bias[0].output[0] if bias is not None else matmul.output[0]


def _scaled_heads(
    nodes: Sequence[Any], output: str, producers: dict[str, Any], initializers: dict[str, Any]
) -> Any | None:
    """The ``Mul`` that scales ``output``'s heads by a scalar computed at run time, when
    ``output`` is an attention query or key: Mul(Transpose(Reshape(output)), factor), the
    exported form of ``q k^T / sqrt(head size)``. The factor can then live in the weights."""
    name = output
    for op_type in ("Reshape", "Transpose"):
        readers = [node for node in nodes if name in node.input]
        if len(readers) != 1 or readers[0].op_type != op_type or readers[0].input[0] != name:
            return None
        name = readers[0].output[0]
    # Shape readers (the factor itself is computed from the heads' shape) see no change.
    readers = [node for node in nodes if name in node.input and node.op_type != "Shape"]
    if len(readers) != 1 or readers[0].op_type != "Mul" or readers[0].input[0] != name:
        return None
    factor = readers[0].input[1]
    return readers[0] if factor in producers and factor not in initializers else None


def _runtime_scalars(model: Any, names: Sequence[str]) -> dict[str, float]:
    """The values of ``names``, scalars the graph computes from shapes alone (so any input
    gives them): one run on an input of ones, two wherever a size is free."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    if not names:
        return {}
    probe = copy.deepcopy(model)
    for name in names:
        probe.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    types = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}
    feed = {
        i.name: np.ones([d if isinstance(d, int) else 2 for d in i.shape], types[i.type])
        for i in session.get_inputs()
    }
    values = session.run(list(names), feed)
    if any(np.size(value) != 1 for value in values):
        raise ValueError("an attention scale is not a scalar")
    return {
        name: float(np.asarray(value).reshape(()))
        for name, value in zip(names, values, strict=True)
    }


def _centre_rows(
    activation: str, step: np.ndarray, middle: np.ndarray, prefix: str
) -> tuple[list[Any], list[Any]]:
    """Nodes writing ``(activation - middle) / step`` as uint8 levels to ``{prefix}_q``: a
    BatchNormalization over a 2-D view does the Mul and the Add in one pass (ONNX's
    BatchNormalization wants channels on axis 1), and the levels take the original shape back."""
    from onnx import helper, numpy_helper

    channels = step.shape[0]
    constants = [
        numpy_helper.from_array(np.array([-1, channels], np.int64), f"{prefix}_rows_shape"),
        numpy_helper.from_array((1 / step).astype(np.float32), f"{prefix}_inverse_step"),
        numpy_helper.from_array((-middle / step).astype(np.float32), f"{prefix}_offset"),
        numpy_helper.from_array(np.zeros(channels, np.float32), f"{prefix}_zeros"),
        numpy_helper.from_array(np.ones(channels, np.float32), f"{prefix}_ones"),
    ]
    nodes = [
        helper.make_node("Shape", [activation], [f"{prefix}_shape"]),
        helper.make_node("Reshape", [activation, f"{prefix}_rows_shape"], [f"{prefix}_rows"]),
        # x * inverse_step + offset, with mean 0 and variance 1 (epsilon 0: no change).
        helper.make_node(
            "BatchNormalization",
            [
                f"{prefix}_rows",
                f"{prefix}_inverse_step",
                f"{prefix}_offset",
                f"{prefix}_zeros",
                f"{prefix}_ones",
            ],
            [f"{prefix}_levels_rows"],
            epsilon=0.0,
        ),  # fmt: skip
        helper.make_node(
            "QuantizeLinear",
            [f"{prefix}_levels_rows", "channelwise_unit_scale", "channelwise_zero_point"],
            [f"{prefix}_q_rows"],
        ),  # fmt: skip
        helper.make_node("Reshape", [f"{prefix}_q_rows", f"{prefix}_shape"], [f"{prefix}_q"]),
    ]
    return nodes, constants


def _mask(size: int, channels: np.ndarray) -> np.ndarray:
    mask = np.zeros(size, bool)
    mask[channels] = True
    return mask


def _shared_grid(
    low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray], int]:
    """One step and zero point for all but the last ``WIDE_CHANNELS`` channels (the widest),
    which get a step each around the same zero point: (the wide channels, (steps, middles) for the
    channels followed by the wide ones again, the zero point)."""
    channels = np.arange(len(low) - WIDE_CHANNELS, len(low))  # put last by reorder_hidden
    rest = ~_mask(len(low), channels)
    shared_low, shared_high = min(float(low[rest].min()), 0.0), max(float(high[rest].max()), 0.0)
    step = max(shared_high - shared_low, RANGE_FLOOR) / LEVELS
    zero_point = int(np.clip(round(1 - shared_low / step), 1, 254))
    # A wide channel's step covers its range on the levels either side of the zero point.
    below, above = max(zero_point - 1, 1), 255 - zero_point
    wide_steps = np.maximum.reduce(
        [high[channels] / above, -low[channels] / below, np.full(len(channels), step)]
    )
    steps = np.concatenate([np.full(len(low), step), wide_steps]).astype(np.float32)
    # (q - 128) * step + middle == (q - zero_point) * step: the fold's form of this grid.
    middles = ((ZERO_POINT - zero_point) * steps).astype(np.float32)
    return channels, (steps, middles), zero_point


def _quantize_shared(
    activation: str, steps: np.ndarray, channels: np.ndarray, zero_point: int, prefix: str
) -> tuple[list[Any], list[Any]]:
    """Nodes writing ``activation`` as uint8 levels to ``{prefix}_q``: all channels on one grid
    (QuantizeLinear's own scale, no pass before it), then the wide channels (the last ones)
    sliced out and quantized on their own steps, concatenated after them."""
    from onnx import helper, numpy_helper

    size = len(steps) - len(channels)
    constants = [
        numpy_helper.from_array(np.array(steps[0], np.float32), f"{prefix}_step"),
        numpy_helper.from_array(np.array(zero_point, np.uint8), f"{prefix}_zero_point"),
        numpy_helper.from_array(np.array([size - len(channels)], np.int64), f"{prefix}_wide_start"),
        numpy_helper.from_array(np.array([size], np.int64), f"{prefix}_wide_end"),
        numpy_helper.from_array(np.array([-1], np.int64), f"{prefix}_last_axis"),
        numpy_helper.from_array((1 / steps[size:]).astype(np.float32), f"{prefix}_wide_inverse"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", [activation, f"{prefix}_step",
                                            f"{prefix}_zero_point"], [f"{prefix}_shared_q"]),
        helper.make_node("Slice", [activation, f"{prefix}_wide_start", f"{prefix}_wide_end",
                                   f"{prefix}_last_axis"], [f"{prefix}_wide"]),
        helper.make_node("Mul", [f"{prefix}_wide", f"{prefix}_wide_inverse"],
                         [f"{prefix}_wide_levels"]),
        helper.make_node("QuantizeLinear", [f"{prefix}_wide_levels", "channelwise_unit_scale",
                                            f"{prefix}_zero_point"], [f"{prefix}_wide_q"]),
        helper.make_node("Concat", [f"{prefix}_shared_q", f"{prefix}_wide_q"], [f"{prefix}_q"],
                         axis=-1),
    ]  # fmt: skip
    return nodes, constants


def _move_wide_channels_last(model: Any, ranges: dict[str, Any]) -> set[str]:
    """Reorder every feed-forward block wide enough (``ranges`` updated in place) so that its
    ``WIDE_CHANNELS`` widest hidden channels come last; returns those hidden activations."""
    hidden = set()
    for activation, block in hidden_activations(model).items():
        if activation in ranges and ranges[activation].shape[1] > 2 * WIDE_CHANNELS:
            low, high, _ = ranges[activation]
            widest = np.argsort(high - low, kind="stable")[-WIDE_CHANNELS:]
            order = np.concatenate([np.flatnonzero(~_mask(len(low), widest)), np.sort(widest)])
            reorder_hidden(model, block, order)
            ranges[activation] = ranges[activation][:, order]
            hidden.add(activation)
    return hidden


class _Grids:
    """Each quantized activation's grid, q = 128 + round((x - middle) / step), and how it is
    reached: a shared step with wide channels apart (feed-forward hidden activations), or
    produced directly by the value projection (attention contexts)."""

    def __init__(
        self,
        activations: set[str],
        ranges: dict[str, Any],
        hidden: set[str],
        nodes: Sequence[Any],
        initializers: dict[str, Any],
    ) -> None:
        producers = {output: node for node in nodes for output in node.output}
        self.step_middle: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.wide: dict[str, np.ndarray] = {}  # activation -> its widest channels, apart
        self.zero_points: dict[str, int] = {}  # activation -> the zero point its grid shares
        self.folded: dict[int, str] = {}  # id(value MatMul) -> the context taking its grid
        for activation in activations:
            low, high, _ = ranges[activation]
            producer = producers.get(activation)
            value = _value_projection(activation, nodes, producers, initializers)
            if value is not None:
                self.folded[id(value)] = activation
            elif activation in hidden:
                (
                    self.wide[activation],
                    self.step_middle[activation],
                    self.zero_points[activation],
                ) = _shared_grid(low, high)
                continue
            elif producer is None or producer.op_type not in CENTRED_PRODUCERS:
                # Centring costs an Add over the whole tensor: done where it paid, and free for
                # attention contexts.
                peak = np.maximum(np.abs(low), np.abs(high))
                low, high = -peak, peak
            step = (np.maximum(high - low, RANGE_FLOOR) / LEVELS).astype(np.float32)
            self.step_middle[activation] = step, ((low + high) / 2).astype(np.float32)

    def quantize(self, activation: str) -> tuple[list[Any], list[Any]]:
        """Nodes writing ``activation`` as uint8 levels to ``{activation}_channelwise_q``, and
        the constants they read."""
        from onnx import helper, numpy_helper

        step, middle = self.step_middle[activation]
        p = f"{activation}_channelwise"
        if activation in self.wide:
            return _quantize_shared(
                activation, step, self.wide[activation], self.zero_points[activation], p
            )
        folded = activation in self.folded.values()
        if not folded and np.any(middle):
            return _centre_rows(activation, step, middle, p)
        nodes, constants = [], []
        levels = activation
        if not folded:
            constants.append(numpy_helper.from_array(1 / step, f"{p}_inverse_step"))
            nodes.append(helper.make_node("Mul", [levels, f"{p}_inverse_step"], [f"{p}_scaled"]))
            levels = f"{p}_scaled"
        nodes.append(
            helper.make_node("QuantizeLinear", [levels, "channelwise_unit_scale",
                                                "channelwise_zero_point"], [f"{p}_q"])
        )  # fmt: skip
        return nodes, constants

    def fold(
        self, activation: str, weight: np.ndarray, mean: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The MatMul reading ``activation`` with the grid folded in: (int8 weight, column
        scales, bias to add).

        x @ W + b == (q - 128) @ (step[:, None] * W) + (middle @ W + b): the steps move into
        the weight rows, the channels' middles into the bias."""
        step, middle = self.step_middle[activation]
        w = weight.astype(np.float32)
        if activation in self.wide:
            # Rows for [all channels on the shared grid, the wide channels again]; the wide
            # channels' shared-grid levels saturate, so their rows there are zero.
            channels = self.wide[activation]
            w = np.concatenate([np.where(_mask(len(w), channels)[:, None], 0, w), w[channels]])
            mean = np.concatenate([mean, mean[channels]])
        w_q, w_scale = weight_int8(step[:, None] * w)
        bias_value = middle @ w
        # Bias correction: the weights' rounding errors times the typical q - 128 would shift
        # every output the same way (most GELU outputs sit near their channel's lowest value).
        rounding = step[:, None] * w - w_q * w_scale
        return w_q, w_scale, bias_value + ((mean - middle) / step) @ rounding


def _rebuild(
    model: Any,
    original: Sequence[Any],
    replaced: dict[int, Any],
    removed: set[int],
    rewired: dict[str, str],
    quantize_after: dict[str, list[Any]],
    constants: list[Any],
) -> None:
    """Write the graph's new nodes (in order, each activation's quantizing nodes right after
    its producer) and initializers (those still read, then ``constants``) into ``model``."""
    from onnx import helper

    graph = model.graph
    nodes: list[Any] = [q for i in graph.input for q in quantize_after.pop(i.name, [])]
    for node in original:
        if id(node) in removed:
            continue
        node = replaced.get(id(node), node)
        if any(name in rewired for name in node.input):
            node = copy.deepcopy(node)
            node.input[:] = [rewired.get(name, name) for name in node.input]
        nodes.append(node)
        for output in node.output:
            nodes += quantize_after.pop(output, [])
    if quantize_after:
        raise ValueError(f"activations produced by no node: {sorted(quantize_after)}")
    del graph.node[:]
    graph.node.extend(nodes)
    read = {name for node in nodes for name in node.input}
    kept = [init for init in graph.initializer if init.name in read]
    del graph.initializer[:]
    graph.initializer.extend(kept + constants)
    if not any(op.domain == MICROSOFT_DOMAIN for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MICROSOFT_DOMAIN, 1))


def quantize_channelwise(fp32_path: Path, int8_path: Path, ranges: dict[str, Any]) -> int:
    """Write ``fp32_path`` with its constant-weight MatMuls made int8 (activation ranges from
    ``channel_ranges``) to ``int8_path``; returns how many were rewritten."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(fp32_path))
    ranges = dict(ranges)
    hidden = _move_wide_channels_last(model, ranges)
    graph = model.graph
    # One list of the nodes for the whole rewrite: protobuf hands out a new Python object at
    # every access, and the rewrite tells nodes apart by identity.
    original = list(graph.node)
    producers = {output: node for node in original for output in node.output}
    initializers = {init.name: init for init in graph.initializer}
    constants = [
        numpy_helper.from_array(np.array(1.0, np.float32), "channelwise_unit_scale"),
        numpy_helper.from_array(np.array(ZERO_POINT, np.uint8), "channelwise_zero_point"),
    ]
    matmuls = _quantizable(graph, original)
    missing = sorted({node.input[0] for node, _ in matmuls} - set(ranges))
    if missing:
        raise ValueError(f"no calibration range for {', '.join(missing)}")
    grids = _Grids({node.input[0] for node, _ in matmuls}, ranges, hidden, original, initializers)

    replaced: dict[int, Any] = {}  # id(MatMul) -> its MatMulIntegerToFloat
    rewired: dict[str, str] = {}  # a removed Mul's output -> the heads it read
    scale_muls = [
        _scaled_heads(original, _projection_output(original, node, initializers), producers,
                      initializers)
        for node, _ in matmuls
    ]  # fmt: skip
    scalars = _runtime_scalars(model, sorted({m.input[1] for m in scale_muls if m is not None}))
    removed: set[int] = set()  # bias Adds folded into the MatMul
    quantize_after: dict[str, list[Any]] = {}  # activation -> the nodes that quantize it
    for node, weight in matmuls:
        activation = node.input[0]
        if activation not in quantize_after:
            quantize_after[activation], activation_constants = grids.quantize(activation)
            constants += activation_constants
        w_q, w_scale, bias_value = grids.fold(
            activation, numpy_helper.to_array(weight), ranges[activation][2]
        )
        output = node.output[0]
        bias = bias_add(original, output, initializers)
        if bias is not None:
            add, bias_name = bias
            bias_value = bias_value + numpy_helper.to_array(initializers[bias_name])
            output = add.output[0]
            removed.add(id(add))
        scale_mul = _scaled_heads(original, output, producers, initializers)
        if scale_mul is not None:
            # The heads' scalar factor moves into the columns and the bias; its Mul goes.
            factor = scalars[scale_mul.input[1]]
            w_scale, bias_value = w_scale * factor, bias_value * factor
            removed.add(id(scale_mul))
            rewired[scale_mul.output[0]] = scale_mul.input[0]
        if id(node) in grids.folded:
            # The attention context downstream is quantized on this output's channels:
            # produce (value - middle) / step directly.
            context_step, context_middle = grids.step_middle[grids.folded[id(node)]]
            w_scale = w_scale / context_step
            bias_value = (bias_value - context_middle) / context_step
        base = f"{weight.name}_channelwise"
        constants += [
            numpy_helper.from_array(w_q, f"{base}_int8"),
            numpy_helper.from_array(w_scale.astype(np.float32), f"{base}_column_scale"),
            numpy_helper.from_array(bias_value.astype(np.float32), f"{base}_bias"),
        ]
        inputs = [f"{activation}_channelwise_q", f"{base}_int8", "channelwise_unit_scale",
                  f"{base}_column_scale", "channelwise_zero_point", "", f"{base}_bias"]  # fmt: skip
        replaced[id(node)] = helper.make_node(
            "MatMulIntegerToFloat", inputs, [output], domain=MICROSOFT_DOMAIN
        )
    _rebuild(model, original, replaced, removed, rewired, quantize_after, constants)
    onnx.checker.check_model(model)
    onnx.save(model, str(int8_path))
    return len(replaced)
