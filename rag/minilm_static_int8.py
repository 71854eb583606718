"""The OpenVINO int8 MiniLM graph: activation ranges measured ahead of time, on fixed texts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rag.onnx_minilm import import_openvino, inputs_of_width

# The sample knowledge base's words in windows of 160 (one per line), frozen here: the ranges,
# so the vectors, depend on these texts, and an edit to the sample must not move them.
CALIBRATION = Path(__file__).with_name("int8_calibration.txt")
# How much of each input channel's spread moves into the weights before quantising (SmoothQuant).
# Chosen by the cosine to the float32 vectors on the sample's texts (0.7: 0.9964, 0.8: 0.9976,
# 0.9: 0.9906 mean); the AWS pages agree (0.9969, 0.9981, 0.9936).
ALPHA = 0.8
# Calibration texts are cut where the default embedder cuts them, whatever a setting says, and
# run in batches of one fixed shape, in file order, so that every installation measures the
# same ranges whatever the embedder's batching and padding become (the last bits of a float
# product depend on the shape it runs in).
CALIBRATION_LENGTH = 256
CALIBRATION_ROWS = 8
# A channel still this many times wider than the eighth widest after smoothing goes around the
# int8 product (see `_quantise_matmul`). On the calibration texts that is 4 channels, all in the
# second feed-forward product of layers 0-2 (2.0-2.7x); the next widest is 1.73x.
WIDE = 1.8


def quantise(graph_file: Path, tokenizer_file: Path) -> Any:
    """The graph as an OpenVINO model whose weight MatMuls run on int8: on a CPU with int8 dot
    products, 1.5x the texts/s of bfloat16 (bench.embed_runtimes), a sync 1.4x quicker
    (bench.sync_aws).

    Each MatMul's input gets one fixed range, measured on the calibration texts in float32, so
    a text's vector depends on the rest of its batch only through rounding at the width the
    batch is padded to (`token_batches`), and every installation computes the same graph, so
    the same vectors. A few hidden channels of BERT carry values 10-50x the
    others for every token; one range for all of them would leave the rest a few levels. So
    first each input channel is divided by a factor and the weight row it meets multiplied by
    it (SmoothQuant: the product is unchanged), which evens the channels out at the cost of a
    little more spread in the weights, whose columns get a range each. OpenVINO reads the
    FakeQuantize nodes placed here and runs those MatMuls as integer products. The few channels
    smoothing leaves far wider than the rest are multiplied apart, in floating point.
    """
    ov = import_openvino()
    core = ov.Core()
    model = core.read_model(str(graph_file))
    matmuls = [op for op in model.get_ordered_ops() if op.get_type_name() == "MatMul"
               and op.input_value(1).get_node().get_type_name() == "Constant"]
    ranges = _input_ranges(core, model, [m.get_friendly_name() for m in matmuls],
                           _calibration_batches(tokenizer_file))
    for matmul, (low, high) in zip(matmuls, ranges, strict=True):
        _quantise_matmul(matmul, low, high)
    model.validate_nodes_and_infer_types()
    return model


def _calibration_batches(tokenizer_file: Path) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(max_length=CALIBRATION_LENGTH)
    tokenizer.no_padding()
    texts = CALIBRATION.read_text(encoding="utf-8").splitlines()
    encodings = tokenizer.encode_batch(texts)
    for start in range(0, len(encodings), CALIBRATION_ROWS):
        batch = encodings[start:start + CALIBRATION_ROWS]
        yield inputs_of_width([e.ids for e in batch], CALIBRATION_LENGTH)


def _input_ranges(core: Any, model: Any, names: list[str],
                  batches: Iterator[tuple[np.ndarray, np.ndarray]]
                  ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per MatMul, the lowest and highest value of each input channel over the real tokens."""
    probe = model.clone()  # the same graph with each MatMul's input as an extra output
    ops = {op.get_friendly_name(): op for op in probe.get_ordered_ops()}
    probe.add_outputs([ops[name].input_value(0) for name in names])
    compiled = core.compile_model(probe, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    low: list[np.ndarray] = []
    high: list[np.ndarray] = []
    for ids, mask in batches:
        result = request.infer({"input_ids": ids, "attention_mask": mask})
        real = mask.astype(bool)  # padding is masked out later; its values must not widen ranges
        for k in range(len(names)):
            values = np.asarray(result[compiled.outputs[k + 1]])[real]  # (tokens, channels)
            if len(low) <= k:
                low.append(values.min(axis=0))
                high.append(values.max(axis=0))
            else:
                low[k] = np.minimum(low[k], values.min(axis=0))
                high[k] = np.maximum(high[k], values.max(axis=0))
    return list(zip(low, high, strict=True))


def _quantise_matmul(matmul: Any, low: np.ndarray, high: np.ndarray, *,
                     wide_ratio: float = WIDE) -> None:
    import openvino.opset13 as ops

    if matmul.get_attributes().get("transpose_b"):
        raise ValueError(f"{matmul.get_friendly_name()}: weights stored transposed")
    weights = matmul.input_value(1).get_node().get_data().astype(np.float32)  # (in, out)
    spread = np.maximum(np.abs(low), np.abs(high))
    factor = np.clip(spread ** ALPHA / np.maximum(np.abs(weights).max(axis=1), 1e-8)
                     ** (1 - ALPHA), 1e-5, None)
    low, high = low / factor, high / factor
    # The feed-forward output's input (GELU's) keeps one or two channels 2-3x the others after
    # smoothing; in the shared range they would cost every other channel a bit. They meet
    # their weights in a small float product beside the int8 one instead (1 - cosine to
    # float32 on the AWS pages 0.0018 -> 0.0011, for 2-3% more time), and are zeroed
    # out of it, so clipping them there changes nothing.
    smoothed_spread = np.maximum(np.abs(low), np.abs(high))
    eighth_widest = np.sort(smoothed_spread)[-min(8, len(factor))]
    wide = np.flatnonzero(smoothed_spread > wide_ratio * eighth_widest)
    rest = np.ones(len(factor), dtype=bool)
    rest[wide] = False
    source = matmul.input_value(0)
    smoothed = ops.multiply(source, _constant(1.0 / factor))
    lowest, highest = _constant(low[rest].min()), _constant(high[rest].max())
    activations = ops.fake_quantize(smoothed, lowest, highest, lowest, highest, 256)
    scaled = weights * factor[:, None]
    scaled[wide] = 0.0
    column = np.maximum(np.abs(scaled).max(axis=0, keepdims=True), 1e-8)
    # 255 levels: symmetric around zero, so the integer weights need no zero point.
    quantised = ops.fake_quantize(_constant(scaled), _constant(-column), _constant(column),
                                  _constant(-column), _constant(column), 255)
    consumers = list(matmul.output(0).get_target_inputs())
    matmul.input(0).replace_source_output(activations.output(0))
    matmul.input(1).replace_source_output(quantised.output(0))
    if len(wide):
        picked = ops.gather(source, ops.constant(wide.astype(np.int64)),
                            ops.constant(np.int64(-1)))
        beside = ops.add(matmul.output(0), ops.matmul(picked, _constant(weights[wide]),
                                                      False, False))
        for consumer in consumers:
            consumer.replace_source_output(beside.output(0))


def _constant(values: Any) -> Any:
    import openvino.opset13 as ops

    return ops.constant(np.asarray(values, dtype=np.float32))
