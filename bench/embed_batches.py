"""Embedding throughput of sync-shaped work: call window x model batch size (local MiniLM).

Run:  .venv/bin/python -m bench.embed_batches [--pages 100] [--rounds 2]

Chunks a slice of the AWS corpus with the production settings and embeds the chunks' texts
the way the sync job does (one embed call per window of chunks; sentence-transformers sorts
each call's texts by length, so a wider window pads less). A model batch also holds at most
`rag.onnx_minilm.BATCH_TOKENS` tokens with its padding, so for long texts (8 of 256 tokens)
the larger batch sizes give the same batches. Configurations run interleaved,
round after round, so that load from other processes spreads over all of them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bot.app import App
from bot.settings import Settings
from rag.embed import BACKENDS, DEFAULT_BACKEND, LocalEmbedder
from sync.chunk import chunk_markdown, embedding_text

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "aws-docs" / "corpus.jsonl"
CONFIGS = [(64, 32), (256, 32), (64, 64), (256, 16), (1024, 32)]  # (window, model batch)


def texts(pages: int) -> list[str]:
    chunking = App(Settings()).sync_config.chunking
    out: list[str] = []
    with CORPUS.open(encoding="utf-8") as lines:
        for i, line in enumerate(lines):
            if i >= pages:
                break
            page = json.loads(line)
            out += [embedding_text(page["title"], c.section, c.text)
                    for c in chunk_markdown(page["text"], chunking, page["title"])]
    return out


def run(embedder: LocalEmbedder, items: list[str], window: int, batch: int) -> float:
    embedder._batch_size = batch  # a benchmark knob, not an API
    started = time.perf_counter()
    for start in range(0, len(items), window):
        embedder.encode_now(items[start:start + window])
    return len(items) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--backend", default=DEFAULT_BACKEND, choices=BACKENDS)
    args = parser.parse_args()
    items = texts(args.pages)
    embedder = LocalEmbedder(backend=args.backend)
    embedder.encode_now(items[:64])  # load the model and size its buffers
    print(f"{len(items)} chunk texts from {args.pages} pages, backend {args.backend}")
    rates: dict[tuple[int, int], list[float]] = {c: [] for c in CONFIGS}
    for _ in range(args.rounds):
        for window, batch in CONFIGS:
            rates[(window, batch)].append(run(embedder, items, window, batch))
            print(f"  window {window:5d} batch {batch:3d}: {rates[(window, batch)][-1]:.1f}/s",
                  flush=True)
    for (window, batch), values in rates.items():
        print(f"window {window:5d} batch {batch:3d}: best {max(values):.1f} chunks/s")


if __name__ == "__main__":
    main()
