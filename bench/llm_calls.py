"""CPU per Messages API call in Sift's process: posted by Sift, or through the SDK (spans off, on).

Run:  .venv/bin/python -m bench.llm_calls [--calls 2000] [--concurrency 20] [--rounds 3]

A grading-sized request (a long cached system prompt, a question and an excerpt, a JSON
schema) goes through `AnthropicLLM.complete`, `--concurrency` at a time, to the fake Messages
API in a process of its own (no model latency), so the CPU this process uses is the client's:
request building, the HTTP client, the event loop. Three clients: Sift as it runs with no
OpenTelemetry tracer provider registered (it posts the body to the API itself, with the SDK's
headers); the same call through the SDK with its spans off (what Sift does when a provider is
registered, minus the spans); and the SDK's default, spans on (it builds each call's span
attributes even with no provider to keep them). The clients alternate, round by round, and the
ratios of their medians to Sift's are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from bench.grading import start_fake
from rag.llm import AnthropicLLM
from rag.ports import LLMRequest
from tests.fakes.anthropic_server import ModelLatency

SCHEMA = {"type": "object", "properties": {"score": {"type": "number"},
                                           "reason": {"type": "string"}},
          "required": ["score", "reason"], "additionalProperties": False}
REQUEST = LLMRequest(
    model="claude-haiku-5-5", system="# Role: relevance grader\n" + "Judge the excerpt. " * 60,
    messages=(("user", "Question: how do I rotate the staging database credentials?\n\n"
                       "<document>\n" + "The platform team rotates credentials each quarter. " * 40
               + "\n</document>"),),
    max_tokens=200, json_schema=SCHEMA, cache_system=True)


def client(url: str, how: str) -> AnthropicLLM:
    llm = AnthropicLLM(api_key="sk-bench", base_url=url, max_retries=0)
    if how != "sift":
        llm._post = None  # every call through the SDK's request building
    if how == "spans":  # what the SDK does when given no option: its default
        import anthropic

        llm._client = anthropic.AsyncAnthropic(
            api_key="sk-bench", base_url=url, max_retries=0,
            http_client=anthropic.DefaultAioHttpClient(timeout=30))
    return llm


async def cpu_per_call(llm: AnthropicLLM, calls: int, concurrency: int) -> float:
    """Milliseconds of this process's CPU per call, `concurrency` calls in flight."""
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await llm.complete(REQUEST)

    started = time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    return (time.process_time() - started) / calls * 1000


async def main(calls: int, concurrency: int, rounds: int) -> None:
    url, fake = start_fake(ModelLatency())
    clients = {"Sift posts it": client(url, "sift"), "SDK, spans off": client(url, "sdk"),
               "SDK, spans on (its default)": client(url, "spans")}
    try:
        for llm in clients.values():  # warm: connections opened, code paths taken once
            await cpu_per_call(llm, 200, concurrency)
        results: dict[str, list[float]] = {label: [] for label in clients}
        for _ in range(rounds):
            for label, llm in clients.items():
                results[label].append(await cpu_per_call(llm, calls, concurrency))
        for label, values in results.items():
            print(f"{label}: {statistics.median(values):.3f} ms of CPU per call "
                  f"(rounds: {', '.join(f'{v:.3f}' for v in values)})")
        sift = statistics.median(results["Sift posts it"])
        for label, values in list(results.items())[1:]:
            other = statistics.median(values)
            print(f"{label} / Sift: {other / sift:.2f}x; per answer (21 calls that are not "
                  f"streamed): {21 * (other - sift):.1f} ms more")
    finally:
        for llm in clients.values():
            await llm.close()
        fake.terminate()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per round")
    parser.add_argument("--concurrency", type=int, default=20, help="calls in flight")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each client")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.concurrency, args.rounds))
