"""Retrieve-stage latency, memory and import time at scale, with and without compression.

Run:  .venv/bin/python -m bench.retrieval_scale [--chunks 100000] [--questions 200]
                 [--compression none,rq8[:max_connections=16][:memory_limit=3GiB]]
                 [--ef -1] [--max-connections 32] [--memory-limit 3GiB]
                 [--workdir /tmp/sift-bench-retrieval]

Builds a synthetic corpus in a throwaway Weaviate: sentences generated from the vocabulary of
the AWS pages in ../shared/eval/aws-docs (falling back to a built-in word list), embedded by
the real model; each chunk joins a few sentences, and its vector is the normalised sum of
theirs plus a little noise, so that the vectors cluster like real ones without embedding
every chunk (an hour per 100,000 on a 2-core machine). Chunks are generated batch by batch as
they are imported, so a million of them fit in this process. Then it times Sift's Retriever
(production settings: hybrid, alpha 0.5, 20 candidates, MMR diversity) on generated
questions, one at a time: each question once with the model (query vector cache empty), then
again (cache hit), the search alone, the query embedding alone, and Weaviate's readiness
check alone; all of it right after the import, and again once Weaviate has gone idle (its
flushes and compactions after a bulk import done). Each `--compression` (the vector index's
SIFT_WEAVIATE__COMPRESSION) gets a Weaviate process of its own, started fresh, with the same
corpus: its import time, its resident memory once idle (and its peak; split into anonymous
memory, the Go heap that must stay in RAM, and the file pages of its segments it maps) and
the latencies side by side. A variant may change the graph or Go's memory limit for itself:
`rq8:max_connections=16:memory_limit=3GiB`. Goals (issue 67): p95 <= 60 ms with the model at
1,000,000 chunks, memory <= 4 GB with compression.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.machine import process_cpu
from bot.settings import WeaviateSettings
from rag.config import RetrievalConfig
from rag.embed import LocalEmbedder
from rag.index import IndexConfig, WeaviateIndex
from rag.index_schema import COMPRESSIONS, VectorIndexSettings
from rag.ports import Diversity
from rag.query_cache import QueryVectorCache
from rag.retrieve import Retriever
from rag.types import Chunk
from weaviate_server.install import find_binary
from weaviate_server.process import ManagedWeaviate, free_ports

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "aws-docs" / "corpus.jsonl"
FALLBACK = ["instance", "bucket", "policy", "role", "permission", "network", "subnet", "gateway",
            "cluster", "node", "queue", "topic", "function", "trigger", "table", "index",
            "backup", "snapshot", "region", "zone", "endpoint", "certificate", "key", "secret",
            "rotate", "deploy", "pipeline", "build", "image", "container", "task", "service",
            "alarm", "metric", "log", "trace", "quota", "limit", "billing", "invoice", "user",
            "group", "access", "token"]


def vocabulary(corpus: Path, size: int) -> list[str]:
    """The most frequent words of the dev corpus, or the fallback list without it."""
    if not corpus.exists():
        return FALLBACK
    counts: Counter[str] = Counter()
    with corpus.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if number >= 800:
                break
            counts.update(re.findall(r"[a-z]{3,14}", json.loads(line)["text"].lower()))
    return [word for word, _ in counts.most_common(size)]


def sentences(words: list[str], count: int, rng: random.Random) -> list[str]:
    # Zipf-like word choice: common words often, rare ones seldom, as in real text.
    weights = [1 / (rank + 1) for rank in range(len(words))]
    return [" ".join(rng.choices(words, weights, k=rng.randint(8, 22))).capitalize() + "."
            for _ in range(count)]


def sentence_basis(embedder: LocalEmbedder, words: list[str], rng: random.Random
                   ) -> tuple[list[str], np.ndarray]:
    pool = sentences(words, 3000, rng)
    return pool, np.asarray(embedder.encode_now(pool), dtype=np.float32)


def batches(pool: list[str], basis: np.ndarray, chunks: int, rng: random.Random,
            size: int = 5000) -> Iterator[tuple[list[Chunk], np.ndarray]]:
    """The corpus, `size` chunks at a time: the same chunks for the same `rng` seed."""
    noise = np.random.default_rng(rng.randrange(2**32))
    for start in range(0, chunks, size):
        made: list[Chunk] = []
        vectors = np.empty((min(size, chunks - start), basis.shape[1]), dtype=np.float32)
        for row, i in enumerate(range(start, start + len(vectors))):
            picked = rng.sample(range(len(pool)), rng.randint(3, 8))
            vector = basis[picked].sum(axis=0) + noise.normal(0, 0.02, basis.shape[1])
            vectors[row] = vector / np.linalg.norm(vector)
            doc = i // 10
            made.append(Chunk(chunk_id=f"syn-{doc}-{i % 10}", doc_id=f"doc-{doc}",
                              source="synthetic", title=pool[picked[0]][:60],
                              section=pool[picked[1]][:40],
                              text=" ".join(pool[p] for p in picked), chunk_index=i % 10,
                              tokens=120))
        yield made, vectors


def questions(pool: list[str], count: int, rng: random.Random) -> list[str]:
    made = []
    for _ in range(count):
        words = rng.choice(pool).rstrip(".").lower().split()
        made.append(f"how do I {' '.join(rng.sample(words, min(6, len(words))))}?")
    return made


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    cut = statistics.quantiles(ms, n=100)
    return {"p50_ms": round(cut[49], 1), "p95_ms": round(cut[94], 1), "p99_ms": round(cut[98], 1)}


async def timed(call: Awaitable[Any]) -> float:
    started = time.perf_counter()
    await call
    return time.perf_counter() - started


VARIANT_OPTIONS = ("ef", "max_connections", "memory_limit")


def variant(spec: str, args: argparse.Namespace) -> dict[str, Any]:
    """`rq8:max_connections=16:memory_limit=3GiB` as settings, the rest from the options."""
    name, *options = spec.split(":")
    if name not in COMPRESSIONS:
        raise ValueError(f"--compression {name}: choose from {', '.join(COMPRESSIONS)}")
    made: dict[str, Any] = {"label": spec, "compression": name, "ef": args.ef,
                            "max_connections": args.max_connections,
                            "memory_limit": args.memory_limit}
    for option in options:
        key, _, value = option.partition("=")
        if key not in VARIANT_OPTIONS or not value:
            raise ValueError(f"--compression {spec}: {option!r} is not one of "
                             f"{', '.join(k + '=…' for k in VARIANT_OPTIONS)}")
        made[key] = value if key == "memory_limit" else int(value)
    return made


async def bench(args: argparse.Namespace, server: ManagedWeaviate, chosen: dict[str, Any]
                ) -> dict:
    rng = random.Random(args.seed)  # the same corpus and questions for every compression
    embedder = LocalEmbedder()
    pool, basis = await asyncio.to_thread(sentence_basis, embedder,
                                          vocabulary(args.corpus, 4000), rng)
    compression = chosen["label"]
    vectors = VectorIndexSettings(ef=chosen["ef"], max_connections=chosen["max_connections"],
                                  compression=chosen["compression"])
    index = WeaviateIndex(IndexConfig(http_url=server.url, grpc_url=f"127.0.0.1:"
                                      f"{server.ports.grpc}", api_key=server.api_key,
                                      collection="BenchRetrieval", insert_timeout_s=600,
                                      vectors=vectors),
                          embedder.name, embedder.dimension)
    await index.connect()
    started, import_s, done = time.perf_counter(), 0.0, 0
    try:
        made = batches(pool, basis, args.chunks, rng)
        while (batch := await asyncio.to_thread(next, made, None)) is not None:
            chunks, batch_vectors = batch
            import_s += await timed(index.upsert(chunks, batch_vectors.tolist()))
            done += len(chunks)
            if done % 50_000 == 0 or done == args.chunks:
                print(f"  {compression}: indexed {done} chunks ({import_s:.0f} s importing)",
                      flush=True)
        build_s = time.perf_counter() - started
        asked = questions(pool, args.questions, rng)
        warm = questions(pool, 10, rng)
        after_import = await measure(index, embedder, asked, warm)
        settle_s = await settled(server, args.settle_timeout_s)
        # The same questions against the index once Weaviate's background work after the
        # bulk import (segment flushes and compactions) is over: what a server that imported
        # its chunks a while ago answers with. New phrasings, so no cached vectors help.
        settled_cases = await measure(index, embedder, [q + " please" for q in asked], warm)
        memory = weaviate_memory(server)
        count = await index.count()
    finally:
        await index.drop()
        await index.close()
    return {**chosen, "compression": compression, "chunks": count, "questions": len(asked),
            "build_s": round(build_s, 1), "import_s": round(import_s, 1),
            "settle_s": round(settle_s, 1), "after_import": after_import,
            "settled": settled_cases, **memory}


def weaviate_memory(server: ManagedWeaviate) -> dict[str, float]:
    """The server's resident memory now and at its peak, in MB (Linux's /proc): anonymous
    memory (the Go heap, which must stay in RAM) and the file pages of its segments that it
    maps and has touched (which the kernel may drop and read again)."""
    pid = server.status().pid
    fields = {}
    if pid is not None:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                fields[name] = round(int(value.split()[0]) / 1024, 1)
    return {"rss_mb": fields.get("VmRSS", 0.0), "peak_rss_mb": fields.get("VmHWM", 0.0),
            "anon_mb": fields.get("RssAnon", 0.0), "file_mb": fields.get("RssFile", 0.0)}


async def measure(index: WeaviateIndex, embedder: LocalEmbedder, asked: list[str],
                  warm: list[str]) -> dict[str, dict[str, float]]:
    config = RetrievalConfig()  # the production defaults
    retriever = Retriever(index, QueryVectorCache(embedder), config)
    for question in warm:  # warm the connection and the model
        await retriever.retrieve([question], None)
    cold = [await timed(retriever.retrieve([q], None)) for q in asked]
    cached = [await timed(retriever.retrieve([q], None)) for q in asked]
    query_vectors = [await embedder.embed_query(q) for q in asked]
    search = [await timed(index.search(q, v, limit=20, alpha=0.5,
                                       diversity=Diversity(config.diversity_balance)))
              for q, v in zip(asked, query_vectors, strict=True)]
    embed = [await timed(embedder.embed_query(q + " again")) for q in asked]
    # What a search used to wait for before its query started (now they run side by side).
    ready = [await timed(index.is_ready()) for _ in asked]
    return {"retrieve_with_model": percentiles(cold),
            "retrieve_cached_vector": percentiles(cached), "search_only": percentiles(search),
            "query_embedding_only": percentiles(embed), "readiness_check_only": percentiles(ready)}


async def settled(server: ManagedWeaviate, timeout_s: float, window_s: float = 5.0) -> float:
    """Seconds until Weaviate used under 5% of a core over `window_s` (its work after the
    import is done), or `timeout_s`."""
    pid = server.status().pid
    started = time.perf_counter()
    if pid is None:
        return 0.0
    while time.perf_counter() - started < timeout_s:
        before = process_cpu(pid)[1]
        await asyncio.sleep(window_s)
        if (process_cpu(pid)[1] - before) / window_s < 0.05:
            break
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--compression", default="none",
                        help=f"comma-separated, each measured in a fresh Weaviate: "
                        f"{', '.join(COMPRESSIONS)}, each optionally followed by "
                        f"':key=value' for {', '.join(VARIANT_OPTIONS)}")
    parser.add_argument("--ef", type=int, default=VectorIndexSettings.ef,
                        help="the HNSW search list (-1: Weaviate's dynamic ef)")
    parser.add_argument("--max-connections", type=int,
                        default=VectorIndexSettings.max_connections)
    parser.add_argument("--memory-limit", default="",
                        help="Weaviate's Go memory limit (GOMEMLIMIT, e.g. 3GiB; "
                        "SIFT_WEAVIATE__MEMORY_LIMIT); default: none")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="words come from here")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sift-bench-retrieval"))
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--settle-timeout-s", type=float, default=600,
                        help="longest wait for Weaviate to go idle after the import")
    args = parser.parse_args()
    try:
        wanted = [variant(spec, args) for spec in args.compression.split(",")]
    except ValueError as exc:
        parser.error(str(exc))
    binary = find_binary(WeaviateSettings().version, None)
    if binary is None:
        raise SystemExit("no Weaviate binary: run `sift weaviate install` first")
    results = []
    for number, chosen in enumerate(wanted):
        folder = args.workdir / f"weaviate-{number}-{chosen['compression']}"
        shutil.rmtree(folder, ignore_errors=True)
        server = ManagedWeaviate(binary, folder, free_ports(),
                                 memory_limit=chosen["memory_limit"])
        server.start(timeout_s=120)
        try:
            results.append(asyncio.run(bench(args, server, chosen)))
        finally:
            server.stop()
    for result in results:
        print(f"\ncompression {result['compression']}: {result['chunks']} chunks (built in "
              f"{result['build_s']} s, {result['import_s']} s of it importing), "
              f"{result['questions']} questions, one at a time; Weaviate "
              f"{result['rss_mb']:.0f} MB resident once idle ({result['anon_mb']:.0f} MB "
              f"anonymous, {result['file_mb']:.0f} MB mapped file pages), "
              f"{result['peak_rss_mb']:.0f} MB at its peak")
        for phase, title in (("after_import", "right after the import"),
                             ("settled", f"settled ({result['settle_s']} s later, idle)")):
            print(title)
            for case in ("retrieve_with_model", "retrieve_cached_vector", "search_only",
                         "query_embedding_only", "readiness_check_only"):
                row = result[phase][case]
                print(f"  {case:24s} p50 {row['p50_ms']:6.1f} ms  p95 {row['p95_ms']:6.1f} ms  "
                      f"p99 {row['p99_ms']:6.1f} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
