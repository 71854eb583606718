"""Sync benchmark: the AWS documentation corpus through the folder connector into Weaviate.

Run:  .venv/bin/python -m bench.sync_aws [--limit N] [--embed-batch 256] [--model-batch 32]
                                          [--backend openvino] [--workdir /tmp/sift-bench-sync]
                                          [--model-alone]

Writes the 2,757 pages of ../shared/eval/aws-docs/corpus.jsonl as Markdown files (title in
front matter) under the work directory (never into the repository), starts a throwaway
Weaviate, and syncs them into a fresh collection with the production chunking settings and
a SQLite state database. Reports documents/s and chunks/s of the first run, its time split
(read / chunk / embed / Weaviate writes / state DB / other, as shares of the wall time; a
batch's writes overlap the next one's embedding), the CPU seconds this process and Weaviate
used in it, peak RSS, and the wall time of a second run with nothing changed, incremental and
full, with the ratios to the first run.

`--model-alone` then embeds the same chunk texts again, in calls of the same size, with nothing
else running: the model's own time for this corpus on this machine, the floor under any sync
of it, reported beside the first run's wall time from the same process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from bench.machine import probe, process_cpu, processor
from bot.app import App
from bot.settings import Settings, SyncSettings, WeaviateSettings
from rag.embed import BACKENDS, DEFAULT_BACKEND, LocalEmbedder
from rag.index import IndexConfig, WeaviateIndex
from storage.db import Database
from storage.sync_state import SyncStateRepository
from sync.connectors.base import SourceDocument
from sync.connectors.folder import FolderConnector
from sync.job import JobConfig, SyncJob
from sync.prepare import text_to_embed, to_chunks
from sync.report import SyncSummary
from weaviate_server.install import find_binary
from weaviate_server.process import ManagedWeaviate, free_ports

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "aws-docs" / "corpus.jsonl"
WEAVIATE_VERSION = WeaviateSettings().version  # the pinned version `sift weaviate install` gets


def write_corpus(target: Path, limit: int | None, corpus: Path = CORPUS) -> int:
    """One Markdown file per page, the page id as its path; returns how many were written."""
    if target.exists():
        shutil.rmtree(target)
    count = 0
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            if limit is not None and count >= limit:
                break
            page = json.loads(line)
            path = target / page["_id"]
            path.parent.mkdir(parents=True, exist_ok=True)
            front = yaml.safe_dump({"title": page["title"]}, allow_unicode=True).strip()
            path.write_text(f"---\n{front}\n---\n\n{page['text']}", encoding="utf-8")
            count += 1
    return count


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


async def timed(job: SyncJob, **kwargs: Any) -> tuple[SyncSummary, float]:
    started = time.perf_counter()
    summary = await job.run(**kwargs)
    return summary, time.perf_counter() - started


async def bench(args: argparse.Namespace, server: ManagedWeaviate, folder: Path) -> dict:
    embedder = LocalEmbedder(batch_size=args.model_batch, backend=args.backend)
    # Load the model and let the runtime size its buffers for full batches of long texts, so
    # that the RSS after this is the embedder's and the peak beyond it the sync's own.
    await asyncio.to_thread(embedder.encode_now, ["warm-up " * 300] * args.embed_batch)
    rss_model = peak_rss_mb()
    config: JobConfig = replace(App(Settings()).sync_config, embed_batch=args.embed_batch)
    db = Database(f"sqlite:///{args.workdir / 'sift.db'}")
    db.upgrade()
    state = SyncStateRepository(db)
    index = WeaviateIndex(IndexConfig(http_url=server.url, grpc_url=f"127.0.0.1:"
                                      f"{server.ports.grpc}", api_key=server.api_key,
                                      collection="BenchSync", insert_timeout_s=300),
                          embedder.name, embedder.dimension)
    await index.connect()

    def job() -> SyncJob:
        return SyncJob("aws", FolderConnector(folder), index, embedder, state, config)

    weaviate_pid = server.status().pid
    if weaviate_pid is None:
        raise SystemExit("the bench's Weaviate has no process id: it did not start")
    try:
        with probe() as speed:
            sync_cpu, weaviate_cpu = time.process_time(), process_cpu(weaviate_pid)[1]
            first, first_s = await timed(job())
            sync_cpu = time.process_time() - sync_cpu
            weaviate_cpu = process_cpu(weaviate_pid)[1] - weaviate_cpu
        rss_first = peak_rss_mb()
        incremental, incremental_s = await timed(job())
        full, full_s = await timed(job(), full=True)
    finally:
        await index.drop()
        await index.close()
        db.dispose()
    result = report(first, first_s, rss_first, incremental, incremental_s, full, full_s, config)
    result["first_run_cpu_s"] = {"sync": round(sync_cpu, 1),
                                  "weaviate": round(weaviate_cpu, 1)}
    if args.model_alone:
        texts = await chunk_texts(FolderConnector(folder), config)
        with probe() as alone_speed:
            wall, cpu = await asyncio.to_thread(embed_alone, embedder, texts, config.embed_batch)
        result["model_alone"] = {"chunks": len(texts), "wall_s": round(wall, 1),
                                 "cpu_s": round(cpu, 1),
                                 "share_of_first_run": round(wall / first_s, 3),
                                 "loop_ms": round(alone_speed.loop_ms, 1)}
    result["rss_after_model_load_mb"] = round(rss_model, 0)
    result["machine_during_first_run"] = {"processor": processor(),
                                          "loop_ms": round(speed.loop_ms, 1),
                                          "matmul_ms": round(speed.matmul_ms, 1),
                                          "steal_share": round(speed.steal_share, 3)}
    return result


async def chunk_texts(connector: FolderConnector, config: JobConfig) -> list[str]:
    """What the sync embedded: each document's chunks, as the job prepares them."""
    texts: list[str] = []
    async for fetched in connector.documents(None):
        if isinstance(fetched, SourceDocument):
            # The content hash only labels chunks; it is not part of what gets embedded.
            chunks = to_chunks("aws", fetched, "", config.chunking)
            texts.extend(text_to_embed(chunk) for chunk in chunks)
    return texts


def embed_alone(embedder: LocalEmbedder, texts: list[str], call: int) -> tuple[float, float]:
    """Wall and CPU seconds of this process to embed `texts` in calls of `call`."""
    started, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), call):
        embedder.encode_now(texts[start:start + call])
    return time.perf_counter() - started, time.process_time() - cpu


def report(first: SyncSummary, first_s: float, rss: float, incremental: SyncSummary,
           incremental_s: float, full: SyncSummary, full_s: float, config: JobConfig) -> dict:
    c = first.counts
    documents = c.added + c.updated + c.unchanged + c.failed
    return {
        "documents": documents, "chunks": c.chunks_written, "failed": c.failed,
        "chunking": {"target_tokens": config.chunking.target_tokens,
                     "overlap_tokens": config.chunking.overlap_tokens,
                     "embed_batch": config.embed_batch},
        "first_run_s": round(first_s, 1),
        "documents_per_s": round(documents / first_s, 2),
        "chunks_per_s": round(c.chunks_written / first_s, 1),
        "time_split": {k: round(v, 3) for k, v in first.phase_shares().items()},
        "peak_rss_mb": round(rss, 0),
        "second_run_incremental_s": round(incremental_s, 2),
        "second_run_incremental_unchanged": incremental.counts.unchanged,
        "second_run_full_s": round(full_s, 2),
        "second_run_full_unchanged": full.counts.unchanged,
        "second_run_chunks_written": incremental.counts.chunks_written
        + full.counts.chunks_written,
        "ratio_incremental": round(first_s / incremental_s, 1),
        "ratio_full": round(first_s / full_s, 1),
    }


def print_report(result: dict) -> None:
    split = result["time_split"]
    print(f"documents {result['documents']}  chunks {result['chunks']}  "
          f"failed {result['failed']}  chunking {result['chunking']}")
    print(f"first run       {result['first_run_s']:8.1f} s   "
          f"{result['documents_per_s']:.2f} documents/s   {result['chunks_per_s']:.1f} chunks/s")
    machine = result["machine_during_first_run"]
    print(f"machine speed   probe loop {machine['loop_ms']:.1f} ms, matrix products "
          f"{machine['matmul_ms']:.1f} ms (bench.machine: the same work in CPU time, lower on a "
          f"faster machine), steal {100 * machine['steal_share']:.1f}%")
    print(f"processor       {machine['processor']}")
    print("time split      " + "  ".join(f"{k} {v:.1%}" for k, v in split.items())
          + "  (shares of the wall time; a batch's writes overlap the next one's embedding)")
    print(f"not embedding   {1 - split['embed']:.1%} (target < 25%)")
    used = result["first_run_cpu_s"]
    print(f"CPU, first run  sync {used['sync']:.0f} s, Weaviate {used['weaviate']:.0f} s "
          f"({used['weaviate'] / result['first_run_s']:.2f} of a core over the run)")
    print(f"peak RSS        {result['peak_rss_mb']:.0f} MB "
          f"({result['rss_after_model_load_mb']:.0f} MB after loading and warming the model)")
    print(f"second run      incremental {result['second_run_incremental_s']:.2f} s "
          f"[{result['second_run_incremental_unchanged']} read] "
          f"({result['ratio_incremental']}x faster), full {result['second_run_full_s']:.2f} s "
          f"[{result['second_run_full_unchanged']} read] "
          f"({result['ratio_full']}x faster); chunks written: "
          f"{result['second_run_chunks_written']}")
    if "model_alone" in result:
        alone = result["model_alone"]
        print(f"model alone     {alone['wall_s']:.1f} s for the same {alone['chunks']} chunk "
              f"texts, nothing else running ({alone['share_of_first_run']:.0%} of the first "
              f"run; {alone['cpu_s']:.0f} CPU s; probe loop {alone['loop_ms']:.1f} ms): no "
              f"sync of this corpus on this machine and model is quicker")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="only the first N pages (quick trials)")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the pages (jsonl)")
    parser.add_argument("--embed-batch", type=int, default=SyncSettings().embed_batch,
                        help="chunks per embed call (SIFT_SYNC__EMBED_BATCH, default %(default)s)")
    parser.add_argument("--model-batch", type=int, default=32, help="the model's batch size")
    parser.add_argument("--backend", default=DEFAULT_BACKEND, choices=BACKENDS)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sift-bench-sync"))
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--model-alone", action="store_true",
                        help="then embed the same chunk texts with nothing else running: the "
                        "model's own time, the floor under the sync's")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    (args.workdir / "sift.db").unlink(missing_ok=True)
    folder = args.workdir / "corpus"
    print(f"wrote {write_corpus(folder, args.limit, args.corpus)} pages to {folder}", flush=True)
    binary = find_binary(WEAVIATE_VERSION, None)
    if binary is None:
        raise SystemExit("no Weaviate binary: run `sift weaviate install` first")
    server = ManagedWeaviate(binary, args.workdir / "weaviate", free_ports())
    server.start(timeout_s=120)
    try:
        result = asyncio.run(bench(args, server, folder))
    finally:
        server.stop()
    result["settings"] = {"embed_batch": args.embed_batch, "model_batch": args.model_batch,
                          "backend": args.backend, "cpus": os.cpu_count()}
    print_report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
