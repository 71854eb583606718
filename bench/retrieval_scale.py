"""Retrieve-stage latency, memory and import time at scale, with and without compression.

Run:  .venv/bin/python -m bench.retrieval_scale [--chunks 100000] [--questions 200]
                 [--compression none,rq8[:max_connections=16][:memory_limit=3GiB]]
                 [--ef -1] [--max-connections 32] [--memory-limit 3GiB]
                 [--reopen disk_access=pread,disk_access=pread:memory_cap=4GiB]
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
`rq8:max_connections=16:memory_limit=3GiB:disk_access=pread`. `--reopen` then restarts that
Weaviate on the same imported data once per setting given (`disk_access`, `memory_limit`, and
`memory_cap`, a memory cgroup over the server as a container's limit would be: its resident
memory and the kernel's cache of the files it read, both counted) and measures again, so that
server settings are compared on one index without importing it again. Goals (issue 67):
p95 <= 60 ms with the model at 1,000,000 chunks, memory <= 4 GB with compression.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
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
from rag.errors import RetrievalError
from rag.index import IndexConfig, WeaviateIndex
from rag.index_schema import COMPRESSIONS, VectorIndexSettings
from rag.ports import Diversity
from rag.query_cache import QueryVectorCache
from rag.retrieve import Retriever
from rag.types import Chunk
from weaviate_server.install import find_binary
from weaviate_server.process import ManagedWeaviate, Ports, free_ports

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


VARIANT_OPTIONS = ("ef", "max_connections", "memory_limit", "disk_access")
# What a restart on the same data can change: the server's settings, not the graph's.
REOPEN_OPTIONS = ("memory_limit", "disk_access", "memory_cap")
DISK_ACCESS = ("mmap", "pread")


def options(spec: str, allowed: tuple[str, ...], flag: str) -> dict[str, str]:
    """`key=value:key=value` as a dict, refusing keys outside `allowed`."""
    made = {}
    for option in filter(None, spec.split(":")):
        key, _, value = option.partition("=")
        if key not in allowed or not value:
            raise ValueError(f"{flag} {spec}: {option!r} is not one of "
                             f"{', '.join(k + '=…' for k in allowed)}")
        if key == "disk_access" and value not in DISK_ACCESS:
            raise ValueError(f"{flag} {spec}: disk_access is {' or '.join(DISK_ACCESS)}")
        if key == "memory_cap":
            size_bytes(value)  # refused here, not after an hour's import
        made[key] = value
    return made


def variant(spec: str, args: argparse.Namespace) -> dict[str, Any]:
    """`rq8:max_connections=16:memory_limit=3GiB` as settings, the rest from the options."""
    name, _, rest = spec.partition(":")
    if name not in COMPRESSIONS:
        raise ValueError(f"--compression {name}: choose from {', '.join(COMPRESSIONS)}")
    made: dict[str, Any] = {"label": spec, "compression": name, "ef": args.ef,
                            "max_connections": args.max_connections,
                            "memory_limit": args.memory_limit, "disk_access": "mmap",
                            "memory_cap": ""}
    for key, value in options(rest, VARIANT_OPTIONS, "--compression").items():
        made[key] = value if key in ("memory_limit", "disk_access") else int(value)
    return made


def size_bytes(size: str) -> int:
    """'4GiB' (or MiB, KiB, B) in bytes."""
    units = {"GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "B": 1}
    for unit, factor in units.items():
        if size.endswith(unit) and size[:-len(unit)].isdigit():
            return int(size[:-len(unit)]) * factor
    raise ValueError(f"memory_cap={size}: write a whole number of GiB, MiB, KiB or B")


class MemoryCap:
    """A memory cgroup (v2, or v1's memory controller) that Weaviate is started in, so that
    everything it is charged for (heap, mapped pages and the page cache its reads fill) is
    held under `limit` as a container's would be. The bench joins it for the moment of the
    start only: a child process is born in its parent's cgroup. A page already in the
    kernel's cache stays charged to whoever read it first, so the start drops the machine's
    clean page cache (root only) to have every page the server reads charged to it."""

    def __init__(self, limit: str) -> None:
        self.limit = limit
        own = Path("/proc/self/cgroup").read_text().splitlines()
        v1 = [line.split(":", 2)[2] for line in own if line.split(":")[1] == "memory"]
        if v1:
            self.home = Path("/sys/fs/cgroup/memory") / v1[0].lstrip("/")
            self.files = {"limit": "memory.limit_in_bytes", "now": "memory.usage_in_bytes",
                          "peak": "memory.max_usage_in_bytes"}
        else:
            self.home = Path("/sys/fs/cgroup") / own[0].split(":", 2)[2].lstrip("/")
            self.files = {"limit": "memory.max", "now": "memory.current",
                          "peak": "memory.peak"}
        self.group = self.home / f"sift-bench-{time.time_ns()}"
        try:
            self.group.mkdir()
            (self.group / self.files["limit"]).write_text(str(size_bytes(limit)))
        except OSError as exc:
            raise SystemExit(f"memory_cap needs a memory cgroup this user may create under "
                             f"{self.home} ({exc.strerror})") from exc

    def start(self, server: ManagedWeaviate) -> None:
        os.sync()
        try:
            Path("/proc/sys/vm/drop_caches").write_text("1")
        except OSError as exc:
            raise SystemExit(f"memory_cap drops the page cache first, which needs root "
                             f"({exc.strerror})") from exc
        (self.group / "cgroup.procs").write_text(str(os.getpid()))
        try:
            server.start(timeout_s=600)
        finally:
            (self.home / "cgroup.procs").write_text(str(os.getpid()))

    def read(self) -> dict[str, float]:
        def mb(name: str) -> float:
            path = self.group / self.files[name]
            return round(int(path.read_text()) / 2**20, 1) if path.exists() else 0.0
        return {"cap_mb": mb("limit"), "cap_used_mb": mb("now"), "cap_peak_mb": mb("peak"),
                "oom_kills": self._oom_kills()}

    def _oom_kills(self) -> int:
        for name in ("memory.events", "memory.oom_control"):
            path = self.group / name
            if path.exists():
                for line in path.read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return 0

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.group.rmdir()


def start_server(binary: Path, folder: Path, ports: Ports, settings: dict[str, Any]
                 ) -> tuple[ManagedWeaviate, MemoryCap | None]:
    server = ManagedWeaviate(binary, folder, ports, memory_limit=settings["memory_limit"],
                             disk_access=settings["disk_access"])
    cap = MemoryCap(settings["memory_cap"]) if settings["memory_cap"] else None
    if cap is not None:
        cap.start(server)
    else:
        server.start(timeout_s=600)  # a restart on a million chunks loads the graph first
    return server, cap


async def bench(args: argparse.Namespace, binary: Path, folder: Path, chosen: dict[str, Any]
                ) -> list[dict]:
    """The variant imported into a fresh server and measured, then measured again after
    each `--reopen` restart on the same data."""
    rng = random.Random(args.seed)  # the same corpus and questions for every compression
    embedder = LocalEmbedder()
    pool, basis = await asyncio.to_thread(sentence_basis, embedder,
                                          vocabulary(args.corpus, 4000), rng)
    compression = chosen["label"]
    vectors = VectorIndexSettings(ef=chosen["ef"], max_connections=chosen["max_connections"],
                                  compression=chosen["compression"])
    ports = free_ports()
    server, cap = start_server(binary, folder, ports, chosen)

    def open_index(server: ManagedWeaviate) -> WeaviateIndex:
        return WeaviateIndex(IndexConfig(http_url=server.url, grpc_url=f"127.0.0.1:"
                                         f"{server.ports.grpc}", api_key=server.api_key,
                                         collection="BenchRetrieval", insert_timeout_s=600,
                                         vectors=vectors),
                             embedder.name, embedder.dimension)

    index = open_index(server)
    await index.connect()
    started, import_s, done = time.perf_counter(), 0.0, 0
    results = []
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
        count = await index.count()
        results.append({**chosen, "compression": compression, "chunks": count,
                        "questions": len(asked), "build_s": round(build_s, 1),
                        "import_s": round(import_s, 1), "settle_s": round(settle_s, 1),
                        "after_import": after_import, "settled": settled_cases,
                        **weaviate_memory(server), **(cap.read() if cap else {})})
        report(results[-1])
        for number, spec in enumerate(args.reopen):
            await index.close()
            server.stop(timeout_s=120)
            if cap is not None:
                cap.remove()
            settings = {**chosen, "memory_cap": "", **spec}
            label = ":".join(f"{k}={v}" for k, v in spec.items())
            print(f"  {compression}: restarting on the same data with {label}", flush=True)
            restart = time.perf_counter()
            server, cap = start_server(binary, folder, ports, settings)
            start_s = time.perf_counter() - restart
            index = open_index(server)  # the restarted server
            try:
                await index.connect()
                settle_s = await settled(server, args.settle_timeout_s)
                # Fresh phrasings again, as a restarted server's first questions would be.
                phrased = [f"{q} ({number + 2})" for q in asked]
                reopened = await measure(index, embedder, phrased, warm)
            except (TimeoutError, RetrievalError) as exc:
                # A cap too small for the index leaves the server thrashing, not answering:
                # a finding, and the next settings are still measured.
                print(f"  {compression}, reopened {label}: not measured, {exc!r} "
                      f"({cap.read() if cap else weaviate_memory(server)})", flush=True)
                continue
            results.append({**settings, "compression": f"{compression}, reopened {label}",
                            "chunks": await index.count(), "questions": len(asked),
                            "start_s": round(start_s, 1), "settle_s": round(settle_s, 1),
                            "settled": reopened, **weaviate_memory(server),
                            **(cap.read() if cap else {})})
            report(results[-1])
    finally:
        await index.drop()
        await index.close()
        server.stop(timeout_s=120)
        if cap is not None:
            cap.remove()
    return results


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


def report(result: dict[str, Any]) -> None:
    """One measured server's figures, printed as soon as they are in."""
    built = (f"built in {result['build_s']} s, {result['import_s']} s of it importing"
             if "build_s" in result else f"restarted in {result['start_s']} s")
    print(f"\ncompression {result['compression']}: {result['chunks']} chunks ({built}), "
          f"{result['questions']} questions, one at a time; Weaviate "
          f"{result['rss_mb']:.0f} MB resident once idle ({result['anon_mb']:.0f} MB "
          f"anonymous, {result['file_mb']:.0f} MB mapped file pages), "
          f"{result['peak_rss_mb']:.0f} MB at its peak")
    if "cap_mb" in result:
        print(f"in a memory cgroup capped at {result['cap_mb']:.0f} MB: "
              f"{result['cap_used_mb']:.0f} MB charged once idle (page cache included), "
              f"{result['cap_peak_mb']:.0f} MB at its peak, {result['oom_kills']} "
              f"out-of-memory kills")
    for phase, title in (("after_import", "right after the import"),
                         ("settled", f"settled ({result['settle_s']} s later, idle)")):
        if phase not in result:
            continue
        print(title)
        for case in ("retrieve_with_model", "retrieve_cached_vector", "search_only",
                     "query_embedding_only", "readiness_check_only"):
            row = result[phase][case]
            print(f"  {case:24s} p50 {row['p50_ms']:6.1f} ms  p95 {row['p95_ms']:6.1f} ms  "
                  f"p99 {row['p99_ms']:6.1f} ms")


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
    parser.add_argument("--reopen", default="",
                        help="comma-separated server settings, each measured after a restart "
                        "on the same imported data: ':'-joined key=value for "
                        f"{', '.join(REOPEN_OPTIONS)} (disk_access: mmap or pread; memory_cap: "
                        "a memory cgroup limit such as 4GiB)")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="words come from here")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sift-bench-retrieval"))
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--settle-timeout-s", type=float, default=600,
                        help="longest wait for Weaviate to go idle after the import")
    args = parser.parse_args()
    try:
        wanted = [variant(spec, args) for spec in args.compression.split(",")]
        args.reopen = [options(spec, REOPEN_OPTIONS, "--reopen")
                       for spec in args.reopen.split(",") if spec]
    except ValueError as exc:
        parser.error(str(exc))
    binary = find_binary(WeaviateSettings().version, None)
    if binary is None:
        raise SystemExit("no Weaviate binary: run `sift weaviate install` first")
    results = []
    for number, chosen in enumerate(wanted):
        folder = args.workdir / f"weaviate-{number}-{chosen['compression']}"
        shutil.rmtree(folder, ignore_errors=True)
        results.extend(asyncio.run(bench(args, binary, folder, chosen)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
