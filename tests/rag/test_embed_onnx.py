"""The ONNX backend runs without torch, and its vectors are the ones sentence-transformers gives."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

from rag.embed import LocalEmbedder

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "How do I request access to the production VPN?",
    "rotate",
    " ".join(["The staging database credentials rotate every ninety days."] * 60),  # truncated
    "Parental leave: 16 weeks paid for the primary caregiver, 6 weeks for the secondary.",
]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_onnx_vectors_match_sentence_transformers(embedder: LocalEmbedder) -> None:
    reference = await LocalEmbedder(backend="torch", batch_size=3).embed_documents(TEXTS)
    vectors = await embedder.embed_documents(TEXTS)
    assert len(vectors) == len(TEXTS)
    for ours, theirs in zip(vectors, reference, strict=True):
        assert len(ours) == 384
        assert cosine(ours, theirs) > 0.9999
        assert abs(math.fsum(x * x for x in ours) - 1.0) < 1e-5


def test_a_question_is_embedded_without_importing_torch(embedder: LocalEmbedder) -> None:
    # The session embedder has made the export; a fresh process must only read it.
    code = ("import asyncio, sys\nfrom rag.embed import LocalEmbedder\n"
            "asyncio.run(LocalEmbedder().embed_query('reset my MFA'))\n"
            "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(ROOT),
                                                      "PATH": "/usr/bin:/bin",
                                                      "HOME": str(Path.home())})
    assert done.stdout.strip() == "[]", done.stderr[-2000:]
