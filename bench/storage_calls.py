"""CPU per call of the storage work every answer does, on a throwaway PostgreSQL.

Run:  .venv/bin/python -m bench.storage_calls [--calls 200] [--rounds 7] [--tree OTHER ...]

Each checkout (this one, then each --tree) is measured in a fresh process of its own, against
a database of its own migrated by its own code, the checkouts alternating for --repeats
passes: admitting a message (the event claim and the per-person quota), the channel policy
lookup, the override reads, the grade cache's lookup for a new question and its store of 20
grades, recording an answer with 18 candidates, and linking it to its posted message. CPU
time of this process only (the database server's work is apart): the median over rounds of
the mean per call, and their sum, one answer's storage CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = 18


def _operations(url: str) -> dict[str, Callable[[int], Any]]:
    """The calls to time, over a freshly migrated database at `url` (the child's code)."""
    from rag.ports import GradeKey
    from storage.channel_policies import ChannelPolicyRepository
    from storage.db import Database
    from storage.dedupe import DedupeRepository
    from storage.grade_cache import GradeCacheRepository
    from storage.interactions import InteractionRepository
    from storage.overrides import OverrideRepository
    from storage.quota import QuotaRepository
    from tests.storage.builders import answer, cand

    db = Database(url)
    db.upgrade()
    dedupe, quota = DedupeRepository(db), QuotaRepository(db)
    policies, overrides = ChannelPolicyRepository(db), OverrideRepository(db)
    policies.put("slack", "C1", "support", {"mode": "fast"})
    policies.put("slack", "*", "default", {})
    overrides.set("d3", "boost", factor=1.5)
    overrides.set("d9", "hide")
    cache = GradeCacheRepository(db, ttl=timedelta(days=30))
    interactions = InteractionRepository(db)
    candidates = [cand(f"d{i % 10}", i, rank=i + 1, score=0.9 if i < 3 else 0.1,
                       selected=i < 3, cited=i < 2) for i in range(CANDIDATES)]
    answered = answer(candidates=candidates, timings={
        "understand": 800.0, "retrieve": 70.0, "grade": 900.0, "select": 0.0,
        "generate": 700.0, "total": 2500.0})
    docs = [f"d{i}" for i in range(10)]
    recorded = [interactions.record(answered)]

    def keys(question: str) -> list[GradeKey]:
        return [GradeKey(question, f"c{j}", f"h{j}", "v1") for j in range(20)]

    class Graded:
        score, reason, model = 0.7, "it says how", "claude-haiku"

    def admit(n: int) -> None:
        dedupe.claim(f"slack:{uuid.uuid4().hex}", 600)
        quota.allow(f"U{n % 50}", 1_000_000, 60.0)

    def record(n: int) -> None:
        recorded.append(interactions.record(answered))

    return {
        "admit (claim + quota)": admit,
        "channel policy": lambda n: policies.first("slack", ["C1", "T1", "*"]),
        "overrides (hidden + 10 documents)": lambda n: (overrides.hidden(),
                                                        overrides.for_documents(docs)),
        "grade cache lookup, new question": lambda n: cache.get_many(keys(uuid.uuid4().hex)),
        "grade cache store, 20 grades": lambda n: cache.put_many(
            {k: Graded() for k in keys(uuid.uuid4().hex)}),
        f"record an answer ({CANDIDATES} candidates)": record,
        "link to the posted message": lambda n: interactions.attach_message(
            recorded[n % len(recorded)], "C1", f"{n}.1"),
    }


def measure(url: str, calls: int, rounds: int) -> dict[str, float]:
    """Median over rounds of the mean CPU ms per call, per operation (after a warm-up)."""
    operations = _operations(url)
    found: dict[str, float] = {}
    for name, call in operations.items():
        for n in range(calls // 4):  # warm-up: compiled-statement caches, connections
            call(n)
        samples = []
        for _ in range(rounds):
            started = time.process_time()
            for n in range(calls):
                call(n)
            samples.append((time.process_time() - started) / calls * 1000)
        found[name] = statistics.median(samples)
    return found


def _fresh_database(admin_url: str, name: str) -> str:
    from sqlalchemy import create_engine, make_url, text

    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def main() -> None:
    parser = argparse.ArgumentParser(
        description="CPU per call of the storage work every answer does (throwaway "
                    "PostgreSQL), for this checkout and others side by side.")
    parser.add_argument("--calls", type=int, default=200, help="calls per round (200)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds; the median is kept (7)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="passes over the checkouts, alternating (2)")
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="another checkout to measure beside this one (repeatable)")
    parser.add_argument("--measure", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # the child: this checkout's code against the database it was given
        print(json.dumps(measure(args.measure, args.calls, args.rounds)))
        return
    from bench.trees import measure_in  # not in the child: an older tree has no such file
    from tests.pg import Cluster, _bin_dir

    bin_dir = _bin_dir()
    if bin_dir is None:
        raise SystemExit("No PostgreSQL server here: apt-get install postgresql.")
    trees = [ROOT, *(t.resolve() for t in args.tree)]
    cluster = Cluster(bin_dir)
    admin_url = cluster.start()
    results: dict[Path, list[dict[str, float]]] = {tree: [] for tree in trees}
    try:
        for repeat in range(args.repeats):
            for i, tree in enumerate(trees):
                url = _fresh_database(admin_url, f"bench_{i}_{repeat}")
                print(f"pass {repeat + 1}/{args.repeats}: {tree}", file=sys.stderr, flush=True)
                results[tree].append(measure_in(tree, __file__, "--measure", url, "--calls",
                                                str(args.calls), "--rounds", str(args.rounds)))
    finally:
        cluster.stop()
    names = list(results[ROOT][0])
    width = max(len(n) for n in names) + 2
    column = 8 * args.repeats + 4  # "0.000 / " per pass, and a gap between the trees
    print(f"CPU ms per call, this process only; each pass's median of {args.rounds} rounds "
          f"of {args.calls} calls")
    print(f"{'':<{width}}" + "".join(f"{t.name[:column - 2]:>{column}}" for t in trees)
          + ("   ratio to the first" if len(trees) > 1 else ""))
    for name in [*names, "one answer's storage"]:
        cells = []
        for tree in trees:
            passes = [sum(p.values()) if name == "one answer's storage" else p[name]
                      for p in results[tree]]
            cells.append(passes)
        line = f"{name:<{width}}" + "".join(
            f"{' / '.join(f'{v:.3f}' for v in passes):>{column}}" for passes in cells)
        if len(trees) > 1:
            first = statistics.median(cells[0])
            line += "   " + ", ".join(f"{statistics.median(c) / first:.2f}x" for c in cells[1:])
        print(line)


if __name__ == "__main__":
    main()
