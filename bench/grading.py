"""Grading benchmark: pointwise-concurrent vs batched against a fake LLM with fixed latency.

Run:  .venv/bin/python -m bench.grading [--latency 0.4] [--candidates 20] [--queries 10]

Reports, per strategy, the wall time of grading N candidates against the floor of one LLM
round trip, grading tokens per query, and the orchestration overhead of a whole question
(wall time minus the time some LLM call was in flight), on an in-memory index so that only
Sift's own code is left in the overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import statistics
import time
from dataclasses import dataclass

from rag.config import GradingConfig, PipelineConfig, RetrievalConfig, SelectionConfig
from rag.grade import LLMGrader
from rag.ports import LLMRequest
from rag.types import Candidate, Chunk, Question
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import make_llm, make_pipeline

PARAGRAPH = ("To rotate the staging database credentials, request a new lease from Vault with "
             "the staging role, update the deployment secret and restart the api pods one at a "
             "time so that connections drain. Production follows a different procedure. ")


class HashEmbedder:
    """A deterministic, instant stand-in so the overhead figure holds only Sift's own code."""

    name, dimension = "bench-hash", 64

    def _vec(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest() * 2
        return [b / 255 for b in digest[: self.dimension]]

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def chunks(n: int) -> list[Chunk]:
    return [Chunk(chunk_id=f"kb:doc{i}:0", doc_id=f"doc{i}", source="kb",
                  title=f"Runbook {i}: staging database credentials", text=PARAGRAPH * 6,
                  section="Procedure", content_hash=f"h{i}") for i in range(n)]


def busy_time(fake: FakeAnthropic, since: float) -> float:
    """Wall time during which at least one LLM call was in flight (merged intervals)."""
    spans = sorted((r.started, r.finished) for r in fake.requests if r.started >= since)
    total, end = 0.0, float("-inf")
    for start, finish in spans:
        if finish > end:
            total += finish - max(start, end)
            end = finish
    return total


@dataclass
class Row:
    strategy: str
    wall_s: list[float]
    input_tokens: int
    output_tokens: int
    calls: int


async def floor(fake: FakeAnthropic, runs: int) -> float:
    llm = make_llm(fake.url, max_retries=0)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await llm.complete(LLMRequest(model="claude-haiku-5-5", system="# Role: round-trip probe",
                                      messages=(("user", "ping"),), max_tokens=10))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def grade_runs(fake: FakeAnthropic, config: GradingConfig, label: str, n: int,
                     queries: int) -> Row:
    grader = LLMGrader(make_llm(fake.url, max_retries=0), "claude-haiku-5-5", config)
    candidates = [Candidate(i + 1, c, 1.0) for i, c in enumerate(chunks(n))]
    walls, tokens_in, tokens_out, calls = [], 0, 0, 0
    for q in range(queries):
        started = time.perf_counter()
        result = await grader.grade(f"how do I rotate the staging database credentials #{q}?",
                                    candidates)
        walls.append(time.perf_counter() - started)
        tokens_in += result.usage.input_tokens + result.usage.cache_read_tokens
        tokens_out += result.usage.output_tokens
        calls += result.usage.calls
    return Row(label, walls, tokens_in // queries, tokens_out // queries, calls // queries)


async def overhead(fake: FakeAnthropic, n: int, queries: int) -> tuple[list[float], list[float]]:
    index, embedder = MemoryIndex(), HashEmbedder()
    docs = chunks(n)
    await index.upsert(docs, await embedder.embed_documents([d.text for d in docs]))
    config = PipelineConfig(retrieval=RetrievalConfig(limit=n, diversity=False),
                            selection=SelectionConfig(threshold=0.0))
    pipeline = make_pipeline(index, embedder, make_llm(fake.url, max_retries=0), config=config)
    extra, retrieval = [], []
    for q in range(queries):
        since = time.monotonic()
        started = time.perf_counter()
        answer = await pipeline.answer(Question(f"how do I rotate staging credentials, run {q}?"))
        extra.append(time.perf_counter() - started - busy_time(fake, since))
        retrieval.append(answer.timings_ms["retrieve"] / 1000)
    return extra, retrieval


async def main(latency: float, n: int, queries: int) -> None:
    fake = FakeAnthropic()
    await fake.start()
    fake.latency_s.update({"grade": latency, "grade_batch": latency, "answer": latency,
                           "understand": latency, "other": latency})
    try:
        rtt = await floor(fake, 5)
        rows = [
            await grade_runs(fake, GradingConfig(concurrency=n), "pointwise", n, queries),
            await grade_runs(fake, GradingConfig(strategy="batched", batch_size=5,
                                                 concurrency=n), "batched x5", n, queries),
            await grade_runs(fake, GradingConfig(strategy="batched", batch_size=n),
                             f"batched x{n}", n, queries),
        ]
        extra, retrieval = await overhead(fake, n, queries)
    finally:
        await fake.stop()
    print(f"fake LLM latency {latency * 1000:.0f} ms; {n} candidates; {queries} queries")
    print(f"floor: one LLM round trip = {rtt * 1000:.1f} ms (median of 5)\n")
    print(f"{'strategy':<12} {'calls':>5} {'p50 ms':>8} {'max ms':>8} {'x floor':>8} "
          f"{'in tok':>8} {'out tok':>8}")
    for r in rows:
        p50 = statistics.median(r.wall_s)
        print(f"{r.strategy:<12} {r.calls:>5} {p50 * 1000:>8.1f} {max(r.wall_s) * 1000:>8.1f} "
              f"{p50 / rtt:>8.2f} {r.input_tokens:>8} {r.output_tokens:>8}")
    own = [e - r for e, r in zip(extra, retrieval, strict=True)]
    print(f"\nper question, wall minus LLM busy time: p50 {statistics.median(extra) * 1000:.1f}"
          f" ms (of which the in-memory test index: {statistics.median(retrieval) * 1000:.1f} ms)")
    print(f"orchestration overhead (also minus retrieval): p50 "
          f"{statistics.median(own) * 1000:.1f} ms, max {max(own) * 1000:.1f} ms")
    print("tokens are the fake server's estimate (characters / 4), input includes cache reads")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.4, help="seconds per fake LLM call")
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--queries", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.latency, args.candidates, args.queries))
