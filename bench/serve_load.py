"""K concurrent Slack conversations against one `sift serve`: throughput, latency, memory.

Run:  .venv/bin/python -m bench.serve_load [--conversations 50] [--seconds 120] [--workers 2]

One `sift serve` process on real PostgreSQL (a throwaway server, tests/pg.py) and a managed
Weaviate holding the sample knowledge base. This process plays Slack (the fake Web API and
signed POSTs to /slack/events) and Claude (the fake Messages API, time to first token + per
output token). Each conversation asks, waits for the answer in its thread, asks again: back to
back by default, or after a random pause (`--think-s`) as a person would.
Reports questions/s, HTTP ack p50/p99, answer p50/p95, the fake model's busy time per answer
and Sift's own time (answer minus model), RSS and database connections over the run, and
where the time goes (Sift's own per-stage timings from the database).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import gc
import itertools
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import aiohttp
import psycopg

from bench.cli_timing import ENTRY, ROOT, environment, sift
from bench.machine import (
    Speed,
    busy_seconds,
    probe,
    process_cpu,
    processor,
    steal_seconds,
)
from tests.fakes.anthropic_server import FakeAnthropic, ModelLatency, Recorded
from tests.fakes.slack_payloads import (
    BOT_TOKEN,
    BOT_USER,
    CHANNEL,
    SIGNING_SECRET,
    app_mention,
    event_request,
    sign,
)
from tests.fakes.slack_server import FakeSlack, Json
from tests.pg import Cluster, _bin_dir
from weaviate_server.process import free_port

TOPICS = ("How do I reset my MFA?", "How do I set up the VPN?",
          "What is the parental leave policy?", "How do I roll back a deploy?",
          "What are the API rate limits?", "How do I report a phishing email?",
          "How do I rotate the staging database credentials?", "What does the travel policy "
          "say about flights?")
SERVERS = ("weaviate", "postgres")  # command names of the servers Sift uses
TAG = re.compile(r"\(q(\d+)\)")


class TimedSlack(FakeSlack):
    """The fake Web API, noting when each thread's answer arrives (no scan of every call)."""

    def __init__(self) -> None:
        super().__init__()
        self.answered: dict[str, asyncio.Event] = {}
        self.answered_at: dict[str, float] = {}

    def _chat_postMessage(self, args: Json) -> Json:
        thread = str(args.get("thread_ts") or "")
        self.answered_at.setdefault(thread, time.monotonic())
        self.answered.setdefault(thread, asyncio.Event()).set()
        return super()._chat_postMessage(args)


@dataclass
class Asked:
    tag: int
    sent: float
    ack_s: float
    answer_s: float | None = None


@dataclass
class Run:
    asked: list[Asked] = field(default_factory=list)
    rss_mb: list[tuple[float, float]] = field(default_factory=list)
    # The same samples split: anonymous memory (heaps, stacks: where a leak shows) and pages of
    # mapped files (shared libraries' code, read in as new paths first run: not a leak).
    rss_anon_mb: list[tuple[float, float]] = field(default_factory=list)
    rss_file_mb: list[tuple[float, float]] = field(default_factory=list)
    connections: list[tuple[float, int]] = field(default_factory=list)
    # (time.monotonic(), CPU seconds of `sift serve` so far) at each sample: CPU per answer
    # over the run, to tell work per answer growing from a longer wait for the same work.
    serve_cpu: list[tuple[float, float]] = field(default_factory=list)
    # (time.monotonic(), machine busy s, this process's CPU s, Weaviate's, PostgreSQL's) at
    # the same samples: who held the cores in each window, to tell Sift's slow windows from
    # a busy neighbour's.
    machine_cpu: list[tuple[float, float, float, float, float]] = field(default_factory=list)
    # (time.monotonic(), ms) how late this process's event loop woke for a short sleep: the
    # fakes' requests and the conversations share that loop, so its lateness is counted in
    # Sift's own time too.
    loop_lag_ms: list[tuple[float, float]] = field(default_factory=list)
    harness_gc_ms: list[float] = field(default_factory=list)  # this process's full collections
    # The machine-speed probe's readings (bench.machine): the same work taking more CPU later
    # means the machine got slower, not Sift.
    speed: Speed = field(default_factory=Speed)
    # (time.monotonic(), steal s so far): time the hypervisor gave this machine's cores to
    # someone else while it had work to run.
    steal: list[tuple[float, float]] = field(default_factory=list)
    serve_cpu_s: float = 0.0  # CPU the `sift serve` process used while the conversations ran
    harness_cpu_s: float = 0.0  # this process: fake Slack, fake Claude, the conversations
    machine_busy_s: float = 0.0  # every core's non-idle time (Weaviate, PostgreSQL, the OS too)
    statements: list[tuple[int, float, str]] = field(default_factory=list)  # pg_stat_statements


def slope_per_minute(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) points, in MB per minute."""
    mean_t = statistics.fmean(t for t, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return 60 * sum((t - mean_t) * (y - mean_y) for t, y in points) / spread if spread else 0.0


def robust_slope_per_minute(points: list[tuple[float, float]]) -> float:
    """Theil-Sen slope (the median of the slopes between every pair of points), in MB per
    minute: a short spike that comes back (a burst of answers at once) barely moves it, where
    it tilts a least-squares line."""
    slopes = [(y2 - y1) / (t2 - t1) for (t1, y1), (t2, y2) in itertools.combinations(points, 2)
              if t2 > t1]
    return 60 * statistics.median(slopes) if slopes else 0.0


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] \
        if ordered else float("nan")


async def conversation(k: int, url: str, slack: TimedSlack, http: aiohttp.ClientSession,
                       tags: Iterator[int], deadline: float, run: Run,
                       think: Callable[[], float]) -> None:
    user = f"UL{k:04d}"
    # Before each question, the think time: a person reading the last answer and typing, and
    # (before the first) not everyone asking in the same instant. Back to back, none.
    while await pause_until(think(), deadline):
        tag = next(tags)
        ts = f"{1_700_000_000 + tag}.{k:06d}"
        text = f"<@{BOT_USER}> {TOPICS[tag % len(TOPICS)]} (q{tag})"
        slack.add_message(CHANNEL, user, text, ts)
        body, content_type = event_request(app_mention(text, ts=ts, user=user,
                                                       event_id=f"EvL{tag:08d}"))
        sent = time.monotonic()
        async with http.post(url, data=body.encode(), headers={
                "Content-Type": content_type, **sign(body)}) as response:
            await response.read()
            assert response.status == 200, response.status
        asked = Asked(tag, sent, time.monotonic() - sent)
        run.asked.append(asked)
        event = slack.answered.setdefault(ts, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), 120)
        except TimeoutError:
            continue  # counted as unanswered
        asked.answer_s = slack.answered_at[ts] - sent


async def pause_until(seconds: float, deadline: float) -> bool:
    """Pause, unless the run ends first; whether there is time left for another question."""
    if time.monotonic() + seconds >= deadline:
        return False
    await asyncio.sleep(seconds)
    return True


def family(pid: int) -> list[int]:
    """`sift serve` and the worker processes it started (SIFT_WORKERS)."""
    found = [pid]
    for entry in Path("/proc").iterdir():
        with suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            if entry.name.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def rss_mb(pid: int) -> dict[str, float]:
    """Resident memory of `sift serve` and its workers together, MB: VmRSS, RssAnon, RssFile."""
    totals = dict.fromkeys(("VmRSS", "RssAnon", "RssFile"), 0.0)
    for member in family(pid):
        with suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                key = line.split(":", 1)[0]
                if key in totals:
                    totals[key] += int(line.split()[1]) / 1024
    return totals


def cpu_seconds(pid: int) -> float:
    """CPU time so far of `sift serve` and its workers."""
    total = 0.0
    for member in family(pid):
        with suppress(OSError):
            total += process_cpu(member)[1]
    return total


class ServerCpu:
    """User + system CPU of the processes whose command name starts with one of `commands`
    (Weaviate's and PostgreSQL's), summed per name from each process's increments, so a
    process that exits (PostgreSQL's autovacuum workers) does not take its time back."""

    def __init__(self, commands: tuple[str, ...]) -> None:
        self.totals = dict.fromkeys(commands, 0.0)
        self._last: dict[int, float] | None = None  # None: the first reading is the baseline

    def update(self) -> dict[str, float]:
        now: dict[int, tuple[str, float]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with suppress(OSError, ValueError, IndexError):
                name, seconds = process_cpu(entry.name)
                command = next((c for c in self.totals if name.startswith(c)), None)
                if command is not None:
                    now[int(entry.name)] = (command, seconds)
        if self._last is not None:
            for pid, (command, seconds) in now.items():
                self.totals[command] += seconds - self._last.get(pid, 0.0)
        self._last = {pid: seconds for pid, (_, seconds) in now.items()}
        return dict(self.totals)


def db_connections(admin_url: str, database: str) -> int:
    with psycopg.connect(admin_url) as connection:
        row = connection.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                                 (database,)).fetchone()
    return int(row[0]) if row else 0


def reset_statements(admin_url: str) -> None:
    """Zero PostgreSQL's per-statement counters (pg_stat_statements, loaded by postgres())."""
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        connection.execute("SELECT pg_stat_statements_reset()")


def statements(admin_url: str, database: str) -> list[tuple[int, float, str]]:
    """(calls, total ms, query) for every statement Sift's database ran since the reset;
    BEGIN and COMMIT count too, so the total is the round trips to the server."""
    with psycopg.connect(admin_url) as connection:
        rows = connection.execute(
            "SELECT calls, total_exec_time, query FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s ORDER BY calls DESC",
            (database,)).fetchall()
    return [(int(calls), float(ms), str(query)) for calls, ms, query in rows]


async def sample(pid: int, admin_url: str, database: str, run: Run, stop: asyncio.Event,
                 every_s: float) -> None:
    started = time.monotonic()
    server_cpu = ServerCpu(SERVERS)
    while not stop.is_set():
        at = time.monotonic() - started
        resident = rss_mb(pid)
        run.rss_mb.append((at, resident["VmRSS"]))
        run.rss_anon_mb.append((at, resident["RssAnon"]))
        run.rss_file_mb.append((at, resident["RssFile"]))
        run.serve_cpu.append((time.monotonic(), cpu_seconds(pid)))
        servers = server_cpu.update()
        run.machine_cpu.append((time.monotonic(), busy_seconds(), time.process_time(),
                                servers["weaviate"], servers["postgres"]))
        run.steal.append((time.monotonic(), steal_seconds()))
        run.connections.append((at, await asyncio.to_thread(db_connections, admin_url,
                                                             database)))
        with suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)


@contextmanager
def timed_collections(into: list[float]) -> Iterator[None]:
    """Note how long each of this process's full (generation 2) collections takes."""
    began = [0.0]

    def note(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                began[0] = time.perf_counter()
            else:
                into.append((time.perf_counter() - began[0]) * 1000)

    gc.callbacks.append(note)
    try:
        yield
    finally:
        gc.callbacks.remove(note)


async def keep_heap_frozen(stop: asyncio.Event, every_s: float = 1.0) -> None:
    """This process keeps every request the fakes saw, so a full collection of its heap grows
    with the run (a second by the end of ten minutes), stalling the fakes' replies, which
    counts as Sift's own time. Frozen objects are not scanned again, so a collection walks
    at most the last second's new objects."""
    while not stop.is_set():
        gc.collect(1)
        gc.freeze()
        with suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)


async def watch_loop(run: Run, stop: asyncio.Event, every_s: float = 0.02) -> None:
    """Note how late each short sleep of this process's event loop ends."""
    while not stop.is_set():
        before = time.monotonic()
        await asyncio.sleep(every_s)
        run.loop_lag_ms.append((before, (time.monotonic() - before - every_s) * 1000))


def calls_by_question(fake: FakeAnthropic) -> dict[int, list[Recorded]]:
    """The finished model calls of each question, by its tag."""
    calls: dict[int, list[Recorded]] = {}
    for record in fake.requests:
        found = TAG.search(json.dumps(record.body.get("messages", [])))
        if found and record.finished:
            calls.setdefault(int(found.group(1)), []).append(record)
    return calls


def model_busy(calls: dict[int, list[Recorded]]) -> dict[int, float]:
    """Per question (by its tag), the time at least one of its model calls was in flight."""
    busy: dict[int, float] = {}
    for tag, records in calls.items():
        total, end = 0.0, float("-inf")
        for start, finish in sorted((r.started, r.finished) for r in records):
            if finish > end:
                total += finish - max(start, end)
                end = finish
        busy[tag] = total
    return busy


Timings = list[tuple[float, dict[str, float]]]  # per answer: when (epoch s), ms per stage


def stage_timings(database_url: str) -> Timings:
    with psycopg.connect(database_url) as connection:
        rows = connection.execute("SELECT extract(epoch FROM created_at), timings_ms "
                                  "FROM interactions").fetchall()
    return [(float(when), {stage: float(ms) for stage, ms in (timings or {}).items()})
            for when, timings in rows]


def by_stage(answers: Iterable[dict[str, float]]) -> dict[str, list[float]]:
    stages: dict[str, list[float]] = {}
    for answer in answers:
        for stage, ms in answer.items():
            stages.setdefault(stage, []).append(ms)
    return stages


def stages_by_window(timings: Timings, width_s: float) -> list[str]:
    """Per window of the run, each stage's p95: which stage grows when the own time does."""
    return [f"  {label}: " + ", ".join(f"{stage} {pct(v, 95):.0f}"
                                      for stage, v in sorted(by_stage(rows).items()))
            for label, rows in by_window(timings, width_s)]


T = TypeVar("T")


def by_window(points: list[tuple[float, T]], width_s: float) -> list[tuple[str, list[T]]]:
    """(when, value) pairs in windows of `width_s` from the first: ("0-10s", values), ..."""
    first = min(when for when, _ in points)
    windows: dict[int, list[T]] = {}
    for when, value in points:
        windows.setdefault(int((when - first) // width_s), []).append(value)
    return [(f"{w * width_s:.0f}-{(w + 1) * width_s:.0f}s", values)
            for w, values in sorted(windows.items())]


@contextmanager
def postgres() -> Iterator[tuple[str, str]]:
    """(SQLAlchemy URL, admin libpq URL) of a throwaway PostgreSQL server."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is not installed (apt-get install postgresql)")
    # pg_stat_statements counts Sift's round trips to the database per answer.
    cluster = Cluster(bin_dir, "-c shared_preload_libraries=pg_stat_statements "
                      "-c pg_stat_statements.track_utility=on")
    try:
        url = cluster.start()
        yield url, f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres"
    finally:
        cluster.stop()


def start_serve(options: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
    """`sift serve` with these options, and the file its log goes to: a file, not a pipe
    nobody reads (which would fill and stall it), for `wait_ready` to quote if it exits. It
    sits in the run's data directory, so it goes when the run's scratch space does."""
    errors = Path(env["SIFT_DATA_DIR"]) / "serve-stderr.log"
    with errors.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-c", ENTRY, "serve", *options], cwd=ROOT,
                                   env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    return process, errors


def wait_ready(base: str, process: subprocess.Popen[bytes], workers: int, errors: Path,
               timeout_s: float = 300) -> None:
    """Until `workers` distinct processes have said 200 on /readyz (each request is a new
    connection, which the kernel gives to any of them). If it exits first, its last words
    (`errors`, where its stderr went) say why."""
    import urllib.error
    import urllib.request
    ready: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = errors.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            raise SystemExit(f"sift serve exited with {process.returncode}"
                             + "".join(f"\n  {line}" for line in said[-15:]))
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=2) as response:
                if response.status == 200:
                    ready.add(int(json.loads(response.read())["pid"]))
                    if len(ready) >= workers:
                        return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05 if ready else 0.2)
    raise SystemExit("sift serve was not ready in time")


async def load(args: argparse.Namespace, env: dict[str, str], database_url: str,
               admin_url: str) -> tuple[Run, FakeAnthropic, float]:
    slack, fake = TimedSlack(), FakeAnthropic()
    fake.model_latency = ModelLatency(args.first_token_ms / 1000, args.per_token_ms / 1000,
                                      jitter=args.model_jitter)
    slack.latency_s = args.slack_ms / 1000
    await slack.start()
    await fake.start()
    port = free_port()
    serve_env = {**env, "PYTHONPATH": str(ROOT), "SIFT_PORT": str(port),
                 "SIFT_ANTHROPIC_API_KEY": "sk-bench", "SIFT_ANTHROPIC_BASE_URL": fake.url,
                 "SIFT_SLACK_BOT_TOKEN": BOT_TOKEN, "SIFT_SLACK_SIGNING_SECRET": SIGNING_SECRET,
                 "SIFT_SLACK_API_URL": slack.api_url, "SIFT_SYNC__SYNC_ON_START": "false",
                 "SIFT_CHAT__QUOTA_PER_MINUTE": "100000",
                 **dict(item.split("=", 1) for item in args.serve_env)}
    process, errors = start_serve(["--workers", str(args.workers)], serve_env)
    run, stop = Run(), asyncio.Event()
    try:
        await asyncio.to_thread(wait_ready, f"http://127.0.0.1:{port}", process, args.workers,
                                errors)
        database = database_url.rsplit("/", 1)[1]
        await asyncio.to_thread(reset_statements, admin_url)
        sampler = asyncio.create_task(sample(process.pid, admin_url, database, run, stop,
                                             args.sample_s))
        watcher = asyncio.create_task(watch_loop(run, stop))
        freezer = asyncio.create_task(keep_heap_frozen(stop))
        tags = itertools.count(1)
        cpu_before = cpu_seconds(process.pid)
        harness_before, machine_before = time.process_time(), busy_seconds()
        started = time.monotonic()
        deadline = started + args.seconds
        url = f"http://127.0.0.1:{port}/slack/events"
        connector = aiohttp.TCPConnector(limit=args.conversations + 10)
        async with aiohttp.ClientSession(connector=connector) as http:
            pauses = random.Random(1)

            def think() -> float:
                return pauses.expovariate(1 / args.think_s) if args.think_s else 0.0

            with timed_collections(run.harness_gc_ms), probe() as run.speed:
                await asyncio.gather(*(conversation(k, url, slack, http, tags, deadline, run,
                                                    think) for k in range(args.conversations)))
        elapsed = time.monotonic() - started
        run.serve_cpu_s = cpu_seconds(process.pid) - cpu_before
        run.harness_cpu_s = time.process_time() - harness_before
        run.machine_busy_s = busy_seconds() - machine_before
        stop.set()
        await sampler
        await watcher
        await freezer
        run.statements = await asyncio.to_thread(statements, admin_url, database)
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 60)
        await slack.stop()
        await fake.stop()
    return run, fake, elapsed


# Sift's own time between the model calls an answer makes, in the order they happen.
SEGMENTS = ("before understanding", "understood -> first grade call",
            "first -> last grade call sent", "last grade back -> answer call",
            "answer written -> seen in Slack")


def own_by_segment(answered: list[Asked],
                   calls: dict[int, list[Recorded]]) -> dict[str, list[float]]:
    """Per answer, the gaps (ms) around its model calls: which part of the flow the own time
    is spent in (an answer without all three kinds of call, e.g. a cache hit, is left out)."""
    gaps: dict[str, list[float]] = {name: [] for name in SEGMENTS}
    for asked in answered:
        records = calls.get(asked.tag, [])
        kinds = {kind: [r for r in records if r.kind == kind]
                 for kind in ("understand", "grade", "answer")}
        if asked.answer_s is None or not all(kinds.values()):
            continue
        understand, grades, answer = kinds["understand"], kinds["grade"], kinds["answer"][-1]
        first_grade = min(r.started for r in grades)
        # The model's own spans (understanding, a grade call, the answer call) fall between.
        spans = (
            (asked.sent, min(r.started for r in understand)),
            (max(r.finished for r in understand), first_grade),
            (first_grade, max(r.started for r in grades)),
            (max(r.finished for r in grades), answer.started),
            (answer.finished, asked.sent + asked.answer_s),
        )
        for name, (start, end) in zip(SEGMENTS, spans, strict=True):
            gaps[name].append((end - start) * 1000)
    return gaps


def own_by_window(answered: list[Asked], busy: dict[int, float], width_s: float) -> str:
    """Sift's own time per window of send time. All conversations ask their first question in
    the same instant, so the first window holds that burst's queue; once the model's latency
    spreads them out, the later windows show the steady state."""
    own = [(a.sent, (a.answer_s - busy.get(a.tag, 0.0)) * 1000) for a in answered
           if a.answer_s is not None]
    return ", ".join(f"{label}: {len(v)}, {pct(v, 50):.0f}/{pct(v, 95):.0f}"
                     for label, v in by_window(own, width_s))


def cpu_by_window(run: Run, answered: list[Asked], width_s: float) -> str:
    """`sift serve` CPU per answer in each window: CPU between two samples over the answers
    that landed between them."""
    landed = sorted(a.sent + a.answer_s for a in answered if a.answer_s is not None)
    spans = []
    for (t0, c0), (t1, c1) in itertools.pairwise(run.serve_cpu):
        count = bisect.bisect_right(landed, t1) - bisect.bisect_right(landed, t0)
        spans.append((t0, (c1 - c0, count)))
    return ", ".join(
        f"{label}: {1000 * sum(c for c, _ in v) / max(1, sum(n for _, n in v)):.0f}"
        for label, v in by_window(spans, width_s)) if spans else "no samples"


def machine_by_window(run: Run, width_s: float) -> str:
    """Per window, the share of all cores used by `sift serve`, this harness, Weaviate,
    PostgreSQL and the rest (the OS, any neighbour the machine shares its cores with)."""
    cores = os.cpu_count() or 1
    spans = []
    for ((t0, s0), (t1, s1)), (m0, m1) in zip(itertools.pairwise(run.serve_cpu),
                                              itertools.pairwise(run.machine_cpu), strict=True):
        busy, harness, weaviate, pg = (b - a for a, b in zip(m0[1:], m1[1:], strict=True))
        serve = s1 - s0
        spans.append((t0, (t1 - t0, serve, harness, weaviate, pg,
                           busy - serve - harness - weaviate - pg)))
    parts = []
    for label, values in by_window(spans, width_s):
        wall = sum(v[0] for v in values) * cores / 100
        parts.append(f"{label}: " + "/".join(f"{sum(v[i] for v in values) / wall:.0f}"
                                             for i in range(1, 6)))
    return ", ".join(parts) if parts else "no samples"


def machine_speed_by_window(run: Run, width_s: float) -> str:
    """Per window: the probe's CPU ms for its fixed work (medians: the interpreter loop, the
    matrix products) and the share of the cores' time stolen by the hypervisor. All flat while
    Sift's numbers move: it is Sift; up with them: it is the machine."""
    cores = os.cpu_count() or 1
    stolen = [(t0, (t1 - t0, s1 - s0)) for (t0, s0), (t1, s1) in itertools.pairwise(run.steal)]
    steal = {label: 100 * sum(s for _, s in v) / max(1e-9, cores * sum(w for w, _ in v))
             for label, v in by_window(stolen, width_s)}
    readings = [(at, (loop, products)) for at, loop, products in run.speed.readings]
    return ", ".join(
        f"{label}: {statistics.median(r[0] for r in v):.1f}/"
        f"{statistics.median(r[1] for r in v):.1f} ms, steal {steal.get(label, 0):.1f}%"
        for label, v in by_window(readings, width_s)) if readings else "no samples"


def lag_by_window(run: Run, width_s: float) -> str:
    """This process's event-loop lateness per window, ms p50/p95/max."""
    return ", ".join(f"{label}: {pct(v, 50):.0f}/{pct(v, 95):.0f}/{max(v):.0f}"
                     for label, v in by_window(run.loop_lag_ms, width_s)
                     ) if run.loop_lag_ms else "no samples"


def report(args: argparse.Namespace, run: Run, fake: FakeAnthropic, elapsed: float,
           timings: Timings) -> None:
    answered = [a for a in run.asked if a.answer_s is not None]
    window_s = max(10.0, args.seconds / 6)  # the run in sixths, for what changes over it
    acks = [a.ack_s * 1000 for a in run.asked]
    answers = [a.answer_s * 1000 for a in answered if a.answer_s is not None]
    calls = calls_by_question(fake)
    busy = model_busy(calls)
    model = [busy.get(a.tag, 0.0) * 1000 for a in answered]
    own = [a.answer_s * 1000 - busy.get(a.tag, 0.0) * 1000 for a in answered
           if a.answer_s is not None]
    print(f"{args.conversations} conversations for {elapsed:.0f} s"
          + (f", {args.think_s:g} s mean think time" if args.think_s else ", back to back")
          + f"; fake model {args.first_token_ms:.0f} ms to first token + "
          f"{args.per_token_ms:.1f} ms/token"
          + (f", each reply's times x [{1 - args.model_jitter:g}, {1 + args.model_jitter:g}]"
             if args.model_jitter else "")
          + (f"; fake Slack {args.slack_ms:g} ms per call" if args.slack_ms else ""))
    if args.serve_env:
        print("sift serve environment: " + ", ".join(args.serve_env))
    print(f"questions: {len(run.asked)} asked, {len(answered)} answered, "
          f"{len(answered) / elapsed:.2f} answers/s")
    print(f"HTTP ack ms: p50 {pct(acks, 50):.0f}, p99 {pct(acks, 99):.0f}, max {max(acks):.0f}")
    print(f"answer ms: p50 {pct(answers, 50):.0f}, p95 {pct(answers, 95):.0f}")
    print(f"model busy ms per answer: p50 {pct(model, 50):.0f}, p95 {pct(model, 95):.0f}")
    print(f"Sift's own ms per answer (answer - model): p50 {pct(own, 50):.0f}, "
          f"p95 {pct(own, 95):.0f}")
    segments = own_by_segment(answered, calls)
    if segments[SEGMENTS[0]]:
        print("Sift's own ms between model calls (p50/p95): " + ", ".join(
            f"{name} {pct(v, 50):.0f}/{pct(v, 95):.0f}" for name, v in segments.items()))
    print("Sift's own ms by when the question was sent (answers, p50/p95): "
          + own_by_window(answered, busy, window_s))
    # One Python process uses at most one core for its own code: near 100% means the answers
    # queue for the interpreter, and Sift's own time is mostly that wait.
    print(f"sift serve CPU ({args.workers} process{'es' if args.workers > 1 else ''}): "
          f"{run.serve_cpu_s:.1f} s in {elapsed:.0f} s "
          f"({100 * run.serve_cpu_s / elapsed:.0f}% of one core), "
          f"{1000 * run.serve_cpu_s / max(1, len(answered)):.0f} ms per answer")
    print("sift serve CPU ms per answer by when answers landed: "
          + cpu_by_window(run, answered, window_s))
    per_answer = 1000 / max(1, len(answered))
    other = run.machine_busy_s - run.serve_cpu_s - run.harness_cpu_s
    # On a machine this bench saturates, Sift's own time is mostly waiting for a core; this
    # says who holds them: the harness plays Slack and Claude on the same machine.
    print(f"CPU ms per answer: sift serve {run.serve_cpu_s * per_answer:.0f}, this harness "
          f"(fake Slack + fake Claude + clients) {run.harness_cpu_s * per_answer:.0f}, "
          f"everything else (Weaviate, PostgreSQL, OS) {other * per_answer:.0f}; machine "
          f"busy {100 * run.machine_busy_s / elapsed / (os.cpu_count() or 1):.0f}% of "
          f"{os.cpu_count()} cores")
    print(f"% of the {os.cpu_count()} cores by window (sift serve/harness/Weaviate/PostgreSQL/"
          "the rest): "
          + machine_by_window(run, window_s))
    print(f"machine speed over the run (bench.machine): {run.speed.summary()}; "
          f"{processor()}")
    print("machine speed by window (the probe's CPU ms for the same work, medians: loop/"
          "matrix products; the hypervisor's steal, % of the cores): "
          + machine_speed_by_window(run, window_s))
    print("harness event-loop lateness ms by window (p50/p95/max), counted in Sift's own time: "
          + lag_by_window(run, window_s))
    print(f"harness full collections: {len(run.harness_gc_ms)}, longest "
          f"{max(run.harness_gc_ms, default=0):.0f} ms")
    rss = [mb for _, mb in run.rss_mb]
    third = max(1, len(rss) // 3)
    print(f"RSS MB: start {rss[0]:.0f}, first third median "
          f"{statistics.median(rss[:third]):.0f}, last third median "
          f"{statistics.median(rss[-third:]):.0f}, max {max(rss):.0f}")
    for name, samples in (("RSS", run.rss_mb), ("  anonymous", run.rss_anon_mb),
                          ("  file pages", run.rss_file_mb)):
        half = [(t, mb) for t, mb in samples if t >= samples[-1][0] / 2]
        if len(half) >= 3:
            # Caches fill during the first minutes (query vectors, priors): "flat" is judged
            # on the second half, where only a leak or the allocator would still move RSS.
            print(f"{name} trend over the second half: {slope_per_minute(half):+.2f} MB/min "
                  f"least squares, {robust_slope_per_minute(half):+.2f} MB/min Theil-Sen "
                  f"({len(half)} samples, {min(mb for _, mb in half):.1f}-"
                  f"{max(mb for _, mb in half):.1f} MB)")
    # Medians by window show whether growth levels off (an allocator settling after warm-up)
    # or keeps climbing (a leak), which one trend over the second half cannot tell apart.
    print("RSS MB median by window: " + ", ".join(
        f"{label} {statistics.median(v):.1f}" for label, v in by_window(run.rss_mb, window_s)))
    print("RSS MB over time: " + ", ".join(f"{t:.0f}s {mb:.1f}" for t, mb in run.rss_mb))
    conns = [n for _, n in run.connections]
    print(f"database connections: median {statistics.median(conns):.0f}, max {max(conns)}")
    report_statements(run.statements, max(1, len(answered)))
    print("where the time goes (Sift's stage timings, ms p50/p95): " + ", ".join(
        f"{stage} {pct(v, 50):.0f}/{pct(v, 95):.0f}"
        for stage, v in sorted(by_stage(answer for _, answer in timings).items())))
    if timings:
        print("stage timings p95 (ms) by when the answer was recorded:")
        print("\n".join(stages_by_window(timings, window_s)))


def report_statements(rows: list[tuple[int, float, str]], answered: int,
                      top: int = 12) -> None:
    """Database round trips per answer, and the statements that make most of them."""
    calls = sum(c for c, _, _ in rows)
    server_ms = sum(ms for _, ms, _ in rows)
    print(f"database per answer: {calls / answered:.1f} statements (BEGIN/COMMIT included), "
          f"{server_ms / answered:.1f} ms of server time")
    for count, ms, query in rows[:top]:
        print(f"  {count / answered:5.2f}  {ms / max(1, count):5.2f} ms  "
              f"{' '.join(query.split())[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--first-token-ms", type=float, default=500.0)
    parser.add_argument("--per-token-ms", type=float, default=8.0)
    parser.add_argument("--slack-ms", type=float, default=0.0, metavar="MS",
                        help="every Slack Web API call answered after this long (default 0; "
                        "Slack's own round trip is tens to hundreds of ms); an answer counts "
                        "as seen when its message reaches the fake")
    parser.add_argument("--model-jitter", type=float, default=0.0, metavar="F",
                        help="scale each model reply's times by a factor drawn from "
                        "[1 - F, 1 + F] (default 0: every reply takes the same time)")
    parser.add_argument("--think-s", type=float, default=0.0, metavar="SECONDS",
                        help="mean of a random (exponential) pause before each question, "
                        "as a person reading the answer and typing the next one (default 0: "
                        "back to back, every conversation's first question in one instant)")
    parser.add_argument("--sample-s", type=float, default=5.0, help="RSS/connection sampling")
    parser.add_argument("--workers", type=int, default=1,
                        help="sift serve --workers N (processes sharing the port)")
    parser.add_argument("--serve-env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for sift serve only (repeatable), e.g. "
                        "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 for an "
                        "allocator A/B")
    args = parser.parse_args()
    bad = [item for item in args.serve_env if "=" not in item]
    if bad:
        parser.error(f"--serve-env takes NAME=VALUE, not {bad[0]!r}")
    if args.think_s < 0:
        parser.error(f"--think-s is a mean pause in seconds, 0 or more, not {args.think_s:g}")
    if not 0 <= args.model_jitter < 1:
        parser.error("--model-jitter is a fraction from 0 up to (not including) 1, not "
                     f"{args.model_jitter:g}")
    with tempfile.TemporaryDirectory(prefix="sift-load-") as scratch, postgres() as (db, admin):
        env = {**environment(Path(scratch)), "SIFT_DATABASE_URL": db}
        sift(ROOT, env, "weaviate", "start")
        try:
            sift(ROOT, env, "sync")  # the sample knowledge base
            run, fake, elapsed = asyncio.run(load(args, env, db, admin))
        finally:
            sift(ROOT, env, "weaviate", "stop")
        timings = stage_timings(db.replace("postgresql+psycopg://", "postgresql://"))
    report(args, run, fake, elapsed, timings)


if __name__ == "__main__":
    main()
