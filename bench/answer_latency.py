"""Answer latency end to end: the web chat of `sift serve`, a graded answer, a model that takes
the time a real one does; time to the first answer token and to the whole answer, as multiples
of one model round trip, per checkout side by side in one run.

Run:  .venv/bin/python -m bench.answer_latency [--tree OTHER_CHECKOUT ...] [--questions 24]
      [--first-token-ms 500] [--per-token-ms 8] [--jitter 0.3] [--env NAME=VALUE ...]

Each checkout (this one first, then every --tree, e.g. a worktree of main before a change)
syncs the sample knowledge base, then serves it with `sift serve` from its own code; the same
questions (bench/sample_questions.yaml, the covered ones) are asked through POST /chat/ask,
one at a time, each as a new visitor's first question, reading the server-sent events as they
arrive. The fake
Claude runs in a process of its own: a time to the first token plus a time per output token,
each reply's scaled by a factor drawn from [1 - jitter, 1 + jitter] (seeded), grades with
reasons of a real model's length. One round trip is the median of a short call to that fake.

First token: the first `preview` event (the answer as it is written); answers without one
(not covered, excerpts) are counted apart. Per stage: the timings each answer was recorded
with (the interactions table), p50 and p95.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench.cli_timing import ENTRY, environment
from bench.grading import floor
from bench.serve_load import wait_ready
from tests.fakes.anthropic_server import ModelLatency
from tests.fakes.llm_rigs import new_fake, provider_env

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = Path(__file__).resolve().parent / "sample_questions.yaml"
STAGES = ("understand", "retrieve", "grade", "select", "generate", "total")
_WORDS = re.compile(r"[a-z0-9]+")
# A real model's reason is a sentence of some twenty words (rag/prompts/grade.md allows 30).
REASON_PAD = ("the excerpt is weighed against the question's subject, environment and the "
              "procedure it asks for, as the grading guide describes")


def sample_grade(question: str, document: str) -> tuple[float, str]:
    """Term overlap as the score, with a reason of realistic length (output costs time)."""
    asked = set(_WORDS.findall(question.lower())) - {"how", "do", "i", "what", "the", "a",
                                                     "is", "my", "to", "of", "for", "in"}
    found = asked & set(_WORDS.findall(document.lower()))
    score = round(len(found) / len(asked), 2) if asked else 0.0
    return score, f"It shares {len(found)} of {len(asked)} terms; {REASON_PAD}."


def _serve_fake(latency: ModelLatency, out: multiprocessing.SimpleQueue) -> None:
    async def run() -> None:
        fake = new_fake("anthropic")
        fake.model_latency = latency
        fake.grade_rule = sample_grade
        await fake.start()
        out.put((fake.url, provider_env("anthropic", fake, Path(tempfile.mkdtemp()))))
        await asyncio.Event().wait()  # until the parent terminates the process

    asyncio.run(run())


@dataclass
class Asked:
    first_token_s: float | None  # None: no preview (not covered, or excerpts)
    answer_s: float


@dataclass
class Result:
    tree: str
    asked: list[Asked] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=dict)  # ms per answer
    selected: list[tuple[str, ...]] = field(default_factory=list)  # each answer's excerpts
    early: dict[str, int] = field(default_factory=dict)  # answers begun early: kept, dropped


def covered_questions(limit: int) -> list[str]:
    data = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))
    return [q["question"] for q in data["questions"] if q["expected_doc_ids"]][:limit]


async def ask(http: aiohttp.ClientSession, base: str, csrf: str, question: str) -> Asked:
    started = time.perf_counter()
    first: float | None = None
    async with http.post(f"{base}/chat/ask", json={"question": question, "csrf": csrf}) as r:
        r.raise_for_status()
        async for line in r.content:
            if line.startswith(b"event: preview") and first is None:
                first = time.perf_counter() - started
            if line.startswith(b"event: answer"):
                return Asked(first, time.perf_counter() - started)
    raise SystemExit(f"no answer event for {question!r}")


async def first_question(base: str, question: str) -> Asked:
    """`question` as a new visitor's first: a browser of its own, so no history (a follow-up
    waits for its standalone rewrite by design)."""
    # Loopback is an IP address, whose cookies aiohttp's jar keeps only when told to.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(base + "/") as page:  # the chat's cookies: visitor and CSRF
            page.raise_for_status()
        csrf = next(c.value for c in http.cookie_jar if c.key == "sift_chat_csrf")
        return await ask(http, base, csrf, question)


async def ask_all(base: str, questions: list[str]) -> list[Asked]:
    await first_question(base, "warm-up: where is the travel policy?")
    return [await first_question(base, q) for q in questions]


def stage_timings(database: Path) -> dict[str, list[float]]:
    """Each answer's recorded stage times, but the warm-up's (the first)."""
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT timings_ms FROM interactions ORDER BY id").fetchall()[1:]
    stages: dict[str, list[float]] = {}
    for (raw,) in rows:
        for stage, ms in json.loads(raw or "{}").items():
            stages.setdefault(stage, []).append(float(ms))
    return stages


def selections(database: Path) -> list[tuple[str, ...]]:
    """Each answer's selected chunks in the order the answer model saw them, but the warm-up's."""
    with sqlite3.connect(database) as db:
        ids = [row[0] for row in db.execute("SELECT id FROM interactions ORDER BY id")][1:]
        return [tuple(chunk for (chunk,) in db.execute(
            "SELECT chunk_id FROM interaction_sources WHERE interaction_id = ? AND selected "
            "ORDER BY rank", (number,))) for number in ids]


def early_answers(log: Path) -> dict[str, int]:
    """How many answers were begun before the last grade (rag/early_answer.py), by outcome."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return {"kept": text.count("early answer kept"), "dropped": text.count("early answer dropped")}


def run_sift(tree: Path, env: dict[str, str], *args: str) -> None:
    done = subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"sift {' '.join(args)} failed in {tree}:\n{done.stderr[-2000:]}")


def measure(tree: Path, scratch: Path, fake_env: dict[str, str], extra: dict[str, str],
            questions: list[str]) -> Result:
    data_dir = scratch / tree.name
    env = {**environment(data_dir), **fake_env, **extra, "PYTHONPATH": str(tree),
           "SIFT_SYNC__SYNC_ON_START": "false", "SIFT_CHAT__QUOTA_PER_MINUTE": "100000",
           "SIFT_LOG_LEVEL": "INFO"}  # the early answers' outcomes are logged at INFO
    port = env["SIFT_PORT"] = str(_free_port())
    print(f"{tree}: syncing the sample", file=sys.stderr, flush=True)
    run_sift(tree, env, "sync")
    errors = data_dir / "serve-stderr.log"
    with errors.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-c", ENTRY, "serve"], cwd=tree, env=env,
                                   stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        wait_ready(f"http://127.0.0.1:{port}", process, 1, errors)
        print(f"{tree}: asking {len(questions)} questions", file=sys.stderr, flush=True)
        asked = asyncio.run(ask_all(f"http://127.0.0.1:{port}", questions))
    finally:
        process.terminate()
        process.wait(30)
        run_sift(tree, env, "weaviate", "stop")
    return Result(str(tree), asked, stage_timings(data_dir / "sift.db"),
                  selections(data_dir / "sift.db"), early_answers(errors))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def report(results: list[Result], rtt: float, latency: ModelLatency) -> None:
    print(f"fake model: {latency.first_token_s * 1000:.0f} ms to the first token + "
          f"{latency.per_output_token_s * 1000:.1f} ms per output token, jitter "
          f"±{latency.jitter:.0%}; one round trip = {rtt * 1000:.0f} ms (median of 9)\n")
    print(f"{'checkout':<28} {'answers':>7} {'streamed':>8} {'first p50':>10} "
          f"{'first p95':>10} {'whole p50':>10} {'whole p95':>10}   (× one round trip)")
    for r in results:
        firsts = [a.first_token_s / rtt for a in r.asked if a.first_token_s is not None]
        wholes = [a.answer_s / rtt for a in r.asked]
        shown = (f"{pct(firsts, 50):>10.2f} {pct(firsts, 95):>10.2f}" if firsts
                 else f"{'–':>10} {'–':>10}")
        print(f"{Path(r.tree).name:<28} {len(r.asked):>7} {len(firsts):>8} {shown} "
              f"{pct(wholes, 50):>10.2f} {pct(wholes, 95):>10.2f}")
    print(f"\n{'stage (ms)':<28} " + " ".join(f"{s:>17}" for s in STAGES))
    for r in results:
        cells = [f"{pct(r.stages[s], 50):>8.0f}/{pct(r.stages[s], 95):<8.0f}"
                 if r.stages.get(s) else f"{'–':>17}" for s in STAGES]
        print(f"{Path(r.tree).name + ' p50/p95':<28} " + " ".join(cells))
    print()
    for r in results:
        same = sum(a == b for a, b in zip(r.selected, results[0].selected, strict=False))
        print(f"{Path(r.tree).name:<28} early answers kept {r.early.get('kept', 0)}, dropped "
              f"{r.early.get('dropped', 0)}; selection as {Path(results[0].tree).name}'s for "
              f"{same} of {len(r.selected)} answers")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", type=Path, default=[],
                        help="another checkout to measure beside this one (e.g. main before)")
    parser.add_argument("--questions", type=int, default=24)
    parser.add_argument("--first-token-ms", type=float, default=500.0)
    parser.add_argument("--per-token-ms", type=float, default=8.0)
    parser.add_argument("--jitter", type=float, default=0.3)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for this checkout's server only (e.g. to turn a "
                             "behaviour off and measure without it)")
    args = parser.parse_args()
    latency = ModelLatency(args.first_token_ms / 1000, args.per_token_ms / 1000,
                           jitter=args.jitter)
    queue: multiprocessing.SimpleQueue[Any] = multiprocessing.SimpleQueue()
    fake = multiprocessing.Process(target=_serve_fake, args=(latency, queue), daemon=True)
    fake.start()
    url, fake_env = queue.get()
    os.environ.update(fake_env)
    questions = covered_questions(args.questions)
    extra = dict(item.split("=", 1) for item in args.env)
    try:
        rtt = asyncio.run(floor(url, 9, "anthropic"))
        with tempfile.TemporaryDirectory(prefix="sift-latency-") as scratch:
            results = [measure(ROOT, Path(scratch), fake_env, extra, questions)]
            results += [measure(t.resolve(), Path(scratch), fake_env, {}, questions)
                        for t in args.tree]
    finally:
        fake.terminate()
    report(results, rtt, latency)


if __name__ == "__main__":
    main()
