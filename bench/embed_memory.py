"""Memory and CPU of the local embedding model as `sift serve` uses it, over many input shapes.

Run:  .venv/bin/python -m bench.embed_memory [--pages 40] [--small-calls 120] [--repeats 1]
                                             [--tree OTHER ...] [--backend openvino]

Each checkout (this one, then each --tree) runs in a fresh process of its own, alternating for
--repeats passes, with the model as `sift serve` loads it (one thread). Phases, in order:
  questions  the dev set's 40 questions and their 40 answers, embedded one at a time (texts
             of many token lengths, as people's questions are);
  sync       the chunks of the first --pages AWS pages in calls of the sync's size
             (`SIFT_SYNC__EMBED_BATCH`), then --small-calls (120) calls of 1 to 16 chunks
             (documents changed one at a time, as platforms' webhooks report them);
  during     those chunks again in calls of the sync's size, while the questions are asked one
             at a time, 50 ms apart (people asking while a sync runs);
  again      the questions once more, then each with a short sentence added (new lengths).
Reports resident memory after each phase, the growth over the loaded model, CPU seconds per
phase, how many distinct input shapes reached the runtime, and how long a question's
embedding took during the sync (p50 / p95 / max).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval" / "aws-docs"
PHASES = ("loaded", "questions", "sync", "during", "again")


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def questions() -> list[str]:
    with (EVAL / "queries.jsonl").open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return [r["text"] for r in rows] + [r["answer"] for r in rows if r.get("answer")]


def chunk_texts(pages: int) -> list[str]:
    from bot.app import App
    from bot.settings import Settings
    from sync.chunk import chunk_markdown, embedding_text

    chunking = App(Settings()).sync_config.chunking
    out: list[str] = []
    with (EVAL / "corpus.jsonl").open(encoding="utf-8") as lines:
        for _, line in zip(range(pages), lines, strict=False):
            page = json.loads(line)
            out += [embedding_text(page["title"], c.section, c.text)
                    for c in chunk_markdown(page["text"], chunking, page["title"])]
    return out


async def measure(pages: int, small_calls: int, backend: str) -> dict[str, Any]:
    """This checkout's embedder through the phases above."""
    from dataclasses import replace

    from bot.settings import SyncSettings
    from rag.embed import LocalEmbedder

    asked, chunks = questions(), chunk_texts(pages)
    call = SyncSettings().embed_batch  # chunks per sync call
    embedder = LocalEmbedder(batch_size=32, max_seq_length=256, backend=backend, threads=1)
    await embedder.embed_query("warm-up")
    model = embedder._load()  # a benchmark's look inside: which shapes reach the runtime
    shapes: set[tuple[int, ...]] = set()
    infer = model.runtime.infer

    def recording(ids: Any, mask: Any) -> Any:
        shapes.add(tuple(ids.shape))
        return infer(ids, mask)

    model.runtime = replace(model.runtime, infer=recording)
    found: dict[str, Any] = {"rss": {"loaded": rss_mb()}, "cpu": {}}

    async def phase(name: str, work: Any) -> None:
        started = time.process_time()
        await work()
        found["cpu"][name] = time.process_time() - started
        found["rss"][name] = rss_mb()
        print(f"  {name}: {found['rss'][name]:.0f} MB", file=sys.stderr, flush=True)

    async def ask(texts: list[str]) -> None:
        for text in texts:
            await embedder.embed_query(text)

    async def sync_calls() -> None:
        for start in range(0, len(chunks), call):
            await embedder.embed_documents(chunks[start:start + call])

    async def sync() -> None:
        await sync_calls()
        sizes = random.Random(7)
        for _ in range(small_calls):
            start = sizes.randrange(len(chunks))
            await embedder.embed_documents(chunks[start:start + sizes.randint(1, 16)])

    async def during() -> None:
        waits: list[float] = []
        documents = asyncio.create_task(sync_calls())
        for text in itertools.cycle(asked):
            if documents.done():
                break
            started = time.perf_counter()
            await embedder.embed_query(text)
            waits.append(1000 * (time.perf_counter() - started))
            await asyncio.sleep(0.05)
        await documents
        waits.sort()
        found["question_ms"] = {"p50": statistics.median(waits),
                                "p95": waits[int(0.95 * (len(waits) - 1))], "max": waits[-1],
                                "count": len(waits)}

    async def again() -> None:
        await ask(asked)
        await ask([f"{text} Please include the console steps." for text in asked])

    await phase("questions", lambda: ask(asked))
    await phase("sync", sync)
    await phase("during", during)
    await phase("again", again)
    found["shapes"] = len(shapes)
    found["chunks"] = len(chunks)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Memory and CPU of the local embedding model over many input shapes, "
                    "for this checkout and others side by side.")
    parser.add_argument("--pages", type=int, default=40, help="AWS pages to embed (40)")
    parser.add_argument("--small-calls", type=int, default=120,
                        help="calls of 1 to 16 chunks after the sync, as webhooks bring (120)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="passes over the checkouts, alternating (1)")
    parser.add_argument("--backend", default="openvino",
                        help="SIFT_EMBEDDING__BACKEND to measure (openvino)")
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="another checkout to measure beside this one (repeatable)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # the child: this checkout's code
        print(json.dumps(asyncio.run(measure(args.pages, args.small_calls, args.backend))))
        return
    from bench.trees import measure_in  # not in the child: an older tree has no such file

    trees = [ROOT, *(t.resolve() for t in args.tree)]
    results: dict[Path, list[dict[str, Any]]] = {tree: [] for tree in trees}
    for repeat in range(args.repeats):
        for tree in trees:
            print(f"pass {repeat + 1}/{args.repeats}: {tree}", file=sys.stderr, flush=True)
            results[tree].append(measure_in(tree, __file__, "--measure", "--pages",
                                            str(args.pages), "--small-calls", str(args.small_calls),
                                            "--backend", args.backend))
    report(trees, results, args.backend)


def report(trees: list[Path], results: dict[Path, list[dict[str, Any]]], backend: str) -> None:
    first = results[trees[0]][0]
    print(f"{backend}, one thread; {len(questions())} questions, {first['chunks']} chunks; "
          "each cell: one value per pass")
    print(f"{'':<28}" + "".join(f"{t.name[:22]:>24}" for t in trees))

    def row(label: str, values: list[list[float]], fmt: str) -> None:
        print(f"{label:<28}" + "".join(
            f"{' / '.join(format(v, fmt) for v in passes):>24}" for passes in values))

    for name in PHASES:
        row(f"RSS after {name}, MB", [[p["rss"][name] for p in results[t]] for t in trees], ".0f")
    row("growth over loaded, MB",
        [[p["rss"]["again"] - p["rss"]["loaded"] for p in results[t]] for t in trees], ".0f")
    for name in PHASES[1:]:
        row(f"CPU in {name}, s", [[p["cpu"][name] for p in results[t]] for t in trees], ".1f")
    row("input shapes", [[p["shapes"] for p in results[t]] for t in trees], "d")
    for name in ("p50", "p95", "max"):
        row(f"question during sync {name}, ms",
            [[p["question_ms"][name] for p in results[t]] for t in trees], ".1f")
    if len(trees) > 1:
        base = statistics.median(p["rss"]["again"] - p["rss"]["loaded"]
                                 for p in results[trees[0]])
        for tree in trees[1:]:
            other = statistics.median(p["rss"]["again"] - p["rss"]["loaded"]
                                      for p in results[tree])
            print(f"growth, {tree.name} / {trees[0].name}: {other / base:.2f}x")


if __name__ == "__main__":
    main()
