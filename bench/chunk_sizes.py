"""Chunk size vs vector retrieval quality on the AWS documentation eval set (MiniLM, 256 pieces).

Run:  .venv/bin/python -m bench.chunk_sizes [--targets 150,200,300,400] [--distractors 700]

For each chunk target it chunks the gold documents of ../shared/eval/aws-docs plus a fixed
random sample of distractor pages, embeds "title / section / text" like the sync job does,
and ranks documents for each query by their best chunk (cosine). It reports hit@1, hit@5 and
MRR per target: the embedding model truncates at 256 word pieces, so a chunk longer than
that is only partly represented by its vector.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from rag.embed import LocalEmbedder
from sync.chunk import ChunkingConfig, chunk_markdown, embedding_text

DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "aws-docs"


def load(distractors: int, seed: int) -> tuple[dict[str, tuple[str, str]], list[dict[str, str]]]:
    queries = [json.loads(line) for line in (DATA / "queries.jsonl").open()]
    gold = {q["gold_doc"] for q in queries}
    pages = {}
    for line in (DATA / "corpus.jsonl").open():
        row = json.loads(line)
        pages[row["_id"]] = (row["title"], row["text"])
    others = sorted(set(pages) - gold)
    picked = gold | set(random.Random(seed).sample(others, min(distractors, len(others))))
    return {k: pages[k] for k in sorted(picked)}, queries


def evaluate(embedder: LocalEmbedder, pages: dict[str, tuple[str, str]],
             queries: list[dict[str, str]], config: ChunkingConfig) -> dict[str, float]:
    owners, texts = [], []
    for doc_id, (title, body) in pages.items():
        for chunk in chunk_markdown(body, config, title):
            owners.append(doc_id)
            texts.append(embedding_text(title, chunk.section, chunk.text))
    started = time.perf_counter()
    matrix = np.asarray(embedder.encode_now(texts))
    seconds = time.perf_counter() - started
    query_vectors = np.asarray(embedder.encode_now([q["text"] for q in queries]))
    scores = query_vectors @ matrix.T
    hits1 = hits5 = rr = 0.0
    for qi, query in enumerate(queries):
        best: dict[str, float] = {}
        for ci in np.argsort(-scores[qi])[:200]:
            best.setdefault(owners[ci], float(scores[qi, ci]))
        ranking = list(best)
        rank = ranking.index(query["gold_doc"]) + 1 if query["gold_doc"] in ranking else 0
        hits1 += rank == 1
        hits5 += 0 < rank <= 5
        rr += 1 / rank if rank else 0
    n = len(queries)
    return {"chunks": len(texts), "embed_s": seconds, "hit@1": hits1 / n, "hit@5": hits5 / n,
            "mrr": rr / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="150,200,300,400")
    parser.add_argument("--distractors", type=int, default=700)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    pages, queries = load(args.distractors, args.seed)
    embedder = LocalEmbedder(batch_size=32)
    print(f"{len(pages)} pages, {len(queries)} queries")
    for target in (int(t) for t in args.targets.split(",")):
        config = ChunkingConfig(target_tokens=target, overlap_tokens=min(50, target // 8))
        result = evaluate(embedder, pages, queries, config)
        print(f"target {target:4d}: " + "  ".join(
            f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()),
            flush=True)


if __name__ == "__main__":
    main()
