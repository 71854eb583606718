"""What re-reading one document's history for the learned prior costs, as that history grows."""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.priors import StoredPriors
from rag.prior import PriorConfig
from storage.db import Database
from storage.feedback import FeedbackRepository
from storage.interactions import InteractionRepository
from storage.overrides import HistoryOfDocuments, OverrideRepository
from tests.pg import Cluster, _bin_dir
from tests.storage.builders import answer, cand

DESCRIPTION = """\
The learned prior re-reads a document's graded history (at most every
`SIFT_PRIOR__REFRESH_S`, 60 s, per process) to weigh them by age. This seeds one document
with N graded retrievals spread over --days days, recorded as answers are, and
times `StoredPriors.adjustments` for it with nothing remembered (the refresh a question
triggers): wall and CPU milliseconds per refresh, and the peak of Python's memory during one
(tracemalloc), for each N in --retrievals.

Run it at two commits to compare them (the script only uses APIs both have):
  .venv/bin/python -m bench.prior_history [--retrievals 1000,10000,100000] [--postgres]
"""

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DOC = "popular-doc"


@contextlib.contextmanager
def database(postgres: bool) -> Iterator[Database]:
    if postgres:
        bin_dir = _bin_dir()
        if bin_dir is None:
            raise SystemExit("PostgreSQL is not installed (apt-get install postgresql)")
        cluster = Cluster(bin_dir)  # the throwaway server the tests use
        try:
            db = Database(cluster.start())
            db.upgrade()
            yield db
            db.dispose()
        finally:
            cluster.stop()
        return
    with tempfile.TemporaryDirectory() as scratch:
        db = Database(f"sqlite:///{Path(scratch) / 'sift.db'}")
        db.upgrade()
        yield db
        db.dispose()


def seed(db: Database, start: int, count: int, days: float) -> None:
    """`count` answers recorded as `sift serve` records them, at times spread over `days`
    days: each grades the document (three in ten relevant) and another (one in five: the base
    rate is one in four), and one in twenty gets a vote (one in four of those a 👎)."""
    at = NOW
    interactions = InteractionRepository(db, clock=lambda: at)
    feedback = FeedbackRepository(db, clock=lambda: at)
    for n in range(start, start + count):
        at = NOW - timedelta(days=days * (n % 997) / 997, seconds=n % 3600)
        answered = interactions.record(answer(f"question {n}", [
            cand(DOC, score=0.9 if n % 10 < 3 else 0.2, cited=True),
            cand("other-doc", rank=2, score=0.9 if n % 5 == 0 else 0.2)]))
        if n % 20 == 0:
            feedback.vote(answered, f"U{n % 13}", -1 if n % 80 == 0 else 1, "reaction")


def refresh_cost(db: Database, rounds: int) -> tuple[float, float, float, float]:
    """(wall ms, CPU ms, peak MB of Python's memory, the multiplier) of one refresh."""
    walls, cpus = [], []
    factor = 1.0
    for _ in range(rounds):
        priors = StoredPriors(OverrideRepository(db), HistoryOfDocuments(db, clock=lambda: NOW),
                              PriorConfig(), clock=lambda: NOW)  # nothing remembered
        wall, cpu = time.perf_counter(), time.process_time()
        found = priors.adjustments([DOC])
        walls.append(1000 * (time.perf_counter() - wall))
        cpus.append(1000 * (time.process_time() - cpu))
        factor = found[DOC].multiplier if DOC in found else 1.0
    priors = StoredPriors(OverrideRepository(db), HistoryOfDocuments(db, clock=lambda: NOW),
                          PriorConfig(), clock=lambda: NOW)
    tracemalloc.start()
    priors.adjustments([DOC])
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return statistics.median(walls), statistics.median(cpus), peak, factor


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.prior_history", description=DESCRIPTION,
                                      formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--retrievals", default="1000,10000,100000",
                        help="the history sizes to measure, comma-separated, ascending")
    parser.add_argument("--days", type=float, default=60.0,
                        help="how many days the retrievals are spread over (default 60)")
    parser.add_argument("--rounds", type=int, default=5, help="refreshes timed per size")
    parser.add_argument("--postgres", action="store_true",
                        help="a throwaway PostgreSQL (tests/pg.py) instead of a SQLite file")
    args = parser.parse_args(argv)
    try:
        sizes = [int(n) for n in args.retrievals.split(",")]
    except ValueError:
        parser.error(f"--retrievals takes whole numbers separated by commas, not "
                     f"{args.retrievals!r}")
    if sizes != sorted(sizes) or sizes[0] < 1:
        parser.error("--retrievals must be ascending and positive")
    print(f"one document, retrievals over {args.days:g} days, "
          f"{'PostgreSQL' if args.postgres else 'SQLite'}; per refresh, median of "
          f"{args.rounds}:")
    with database(args.postgres) as db:
        seeded = 0
        for size in sizes:
            seed(db, seeded, size - seeded, args.days)
            seeded = size
            wall, cpu, peak, factor = refresh_cost(db, args.rounds)
            print(f"  {size:>7,} retrievals: {wall:8.1f} ms wall, {cpu:8.1f} ms CPU, "
                  f"peak {peak:6.1f} MB of Python memory (multiplier {factor:.4f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
