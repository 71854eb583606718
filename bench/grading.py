"""Grading benchmark: pointwise, batched and early-stop grading against a fake Claude whose
latency grows with the length of its reply, as a real model's does.

Run:  .venv/bin/python -m bench.grading [--first-token-ms 500] [--per-token-ms 8]
      [--candidates 20] [--queries 10] [--provider anthropic|bedrock|vertex|openai]

The fake model answers after a time to first token plus a per-output-token time. The defaults
are assumptions typical of a small Claude model (Haiku class: about half a second to the first
token, then roughly 125 output tokens a second); pass your own measurements to replace them.
A third of the candidates answer the question (graded 0.9), the rest do not (0.2), each with
a one-sentence reason of realistic length, so that batched grading pays for writing all its
reasons in one reply and early stop has something to stop on.

Reports, per strategy, the wall time of grading N candidates against the floor of one LLM
round trip, grading tokens per query, and the orchestration overhead of a whole question:
wall time minus the time some LLM call was in flight, measured at Sift's side of the LLM
port, on an in-memory index so that only Sift's own code is left in the overhead. The fake
LLM server runs in a process of its own, so its work never counts as Sift's.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import multiprocessing
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rag.config import (
    GradingConfig,
    ModelConfig,
    PipelineConfig,
    RetrievalConfig,
    SelectionConfig,
)
from rag.grade import LLMGrader
from rag.ports import LLM, LLMRequest, LLMResponse, TextSink
from rag.types import Candidate, Chunk, Question
from tests.fakes.anthropic_server import ModelLatency
from tests.fakes.llm_rigs import MODELS, PROVIDERS, adapter, new_fake, provider_env
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import make_llm, make_pipeline

OTHER = ("Production database credentials are rotated by the platform team on a quarterly "
         "schedule; the change calendar lists the windows and the approvers for each cluster. ")
REASONS = {True: "The excerpt gives the staging credential rotation procedure step by step, "
                 "with the Vault role and the pod restart order, which answers the question.",
           False: "The excerpt covers production credential scheduling, a neighbouring topic "
                  "that shares vocabulary but does not answer the staging question."}
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
    """Every third candidate answers the question; the others only share its words."""
    return [Chunk(chunk_id=f"kb:doc{i}:0", doc_id=f"doc{i}", source="kb",
                  title=f"Runbook {i}: staging database credentials",
                  text=(PARAGRAPH if i % 3 == 0 else OTHER) * 6,
                  section="Procedure", content_hash=f"h{i}") for i in range(n)]


def realistic_grade(question: str, document: str) -> tuple[float, str]:
    relevant = "staging role" in document
    return (0.9 if relevant else 0.2), REASONS[relevant]


@dataclass
class TimedLLM:
    """The LLM port, recording when each call was in flight (Sift's side of the wire)."""

    inner: LLM
    spans: list[tuple[float, float]] = field(default_factory=list)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        started = time.perf_counter()
        try:
            return await self.inner.complete(request)
        finally:
            self.spans.append((started, time.perf_counter()))

    async def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        started = time.perf_counter()
        try:
            return await self.inner.stream(request, on_text)
        finally:
            self.spans.append((started, time.perf_counter()))

    def busy_since(self, since: float) -> float:
        """Wall time during which at least one call was in flight (merged intervals)."""
        total, end = 0.0, float("-inf")
        for start, finish in sorted(s for s in self.spans if s[0] >= since):
            if finish > end:
                total += finish - max(start, end)
                end = finish
        return total


def _serve(latency: ModelLatency, port: multiprocessing.SimpleQueue, provider: str) -> None:
    async def run() -> None:
        fake = new_fake(provider)
        fake.model_latency = latency
        fake.grade_rule = realistic_grade
        await fake.start()
        port.put((fake.url, provider_env(provider, fake, Path(tempfile.mkdtemp()))))
        await asyncio.Event().wait()  # until the parent terminates the process

    asyncio.run(run())


def start_fake(latency: ModelLatency,
               provider: str = "anthropic") -> tuple[str, multiprocessing.Process]:
    """The provider's fake in a process of its own, so that it shares no event loop; this
    process's environment then holds the settings and credentials that reach it."""
    queue: multiprocessing.SimpleQueue = multiprocessing.SimpleQueue()
    process = multiprocessing.Process(target=_serve, args=(latency, queue, provider),
                                      daemon=True)
    process.start()
    url, env = queue.get()
    os.environ.update(env)
    return str(url), process


def llm_for(url: str, provider: str) -> Any:
    """The adapter Sift builds for `provider`, no retries (a failure shows in the figures)."""
    if provider == "anthropic":
        return make_llm(url, max_retries=0)
    return adapter(dict(os.environ), max_retries=0)


@dataclass
class Row:
    strategy: str
    wall_s: list[float]
    input_tokens: int
    output_tokens: int
    calls: int


async def floor(url: str, runs: int, provider: str) -> float:
    llm = llm_for(url, provider)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await llm.complete(LLMRequest(model=MODELS[provider][0],
                                      system="# Role: round-trip probe",
                                      messages=(("user", "ping"),), max_tokens=10))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def grade_runs(url: str, config: GradingConfig, label: str, n: int,
                     queries: int, provider: str) -> Row:
    grader = LLMGrader(llm_for(url, provider), MODELS[provider][0], config)
    candidates = [Candidate(i + 1, c, 1.0) for i, c in enumerate(chunks(n))]
    walls, tokens_in, tokens_out, calls = [], 0, 0, 0
    for q in range(queries):
        started = time.perf_counter()
        result = await grader.grade(f"how do I rotate the staging database credentials #{q}?",
                                    candidates)
        walls.append(time.perf_counter() - started)  # what an answer waits for
        await result.settled()  # score first: the reasons' tokens count too
        tokens_in += result.usage.input_tokens + result.usage.cache_read_tokens
        tokens_out += result.usage.output_tokens
        calls += result.usage.calls
    return Row(label, walls, tokens_in // queries, tokens_out // queries, calls // queries)


async def overhead(url: str, n: int, queries: int,
                   provider: str) -> tuple[list[float], list[float]]:
    index, embedder = MemoryIndex(), HashEmbedder()
    docs = chunks(n)
    await index.upsert(docs, await embedder.embed_documents([d.text for d in docs]))
    config = PipelineConfig(retrieval=RetrievalConfig(limit=n, diversity=False),
                            selection=SelectionConfig(threshold=0.0))
    llm = TimedLLM(llm_for(url, provider))
    fast, answer = MODELS[provider]
    config = replace(config, models=ModelConfig(fast_model=fast, answer_model=answer))
    pipeline = make_pipeline(index, embedder, llm, config=config)  # type: ignore[arg-type]
    extra, retrieval = [], []
    for q in range(queries):
        started = time.perf_counter()
        answer = await pipeline.answer(Question(f"how do I rotate staging credentials, run {q}?"))
        extra.append(time.perf_counter() - started - llm.busy_since(started))
        retrieval.append(answer.timings_ms["retrieve"] / 1000)
    return extra, retrieval


def strategies(n: int) -> list[tuple[str, GradingConfig]]:
    wave = GradingConfig(concurrency=n, early_stop=True, early_stop_wave=5,
                         early_stop_enough=6, early_stop_score=0.8)
    return [("pointwise", GradingConfig(concurrency=n)),
            ("batched x5", GradingConfig(strategy="batched", batch_size=5, concurrency=n)),
            (f"batched x{n}", GradingConfig(strategy="batched", batch_size=n)),
            ("early stop", wave)]


async def main(latency: ModelLatency, n: int, queries: int, provider: str) -> None:
    url, server = start_fake(latency, provider)
    try:
        rtt = await floor(url, 5, provider)
        rows = [await grade_runs(url, config, label, n, queries, provider)
                for label, config in strategies(n)]
        extra, retrieval = await overhead(url, n, queries, provider)
    finally:
        server.terminate()
    print(f"provider: {provider} ({MODELS[provider][0]}), through its SDK client and fake")
    print(f"fake model: {latency.first_token_s * 1000:.0f} ms to the first token + "
          f"{latency.per_output_token_s * 1000:.1f} ms per output token; {n} candidates "
          f"(a third relevant); {queries} queries")
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
    parser.add_argument("--first-token-ms", type=float, default=500.0,
                        help="fake model's time to first token (default 500, Haiku-class)")
    parser.add_argument("--per-token-ms", type=float, default=8.0,
                        help="fake model's time per output token (default 8, ~125 tokens/s)")
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--provider", choices=PROVIDERS, default="anthropic",
                        help="the provider whose SDK client and fake carry the calls")
    args = parser.parse_args()
    asyncio.run(main(ModelLatency(args.first_token_ms / 1000, args.per_token_ms / 1000),
                     args.candidates, args.queries, args.provider))
