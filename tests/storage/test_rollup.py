"""The per-day rollups: what the writers keep equals a recount; percentiles from histograms."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from rag import messages
from rag.types import AnswerStatus
from storage.console_docs import gap_questions
from storage.console_overview import overview
from storage.db import Database
from storage.feedback import FeedbackRepository
from storage.interactions import InteractionRepository
from storage.models import DailyLatency, DailyOutcome, DailyTokens
from storage.report import build_report
from storage.rollup import bucket_bounds, bucket_of, histogram_percentile, rebuild
from storage.stats import percentile
from tests.storage.builders import answer
from tests.storage.clock import Clock
from tests.storage.sample import record_sample


def _snapshot(db: Database) -> dict[str, set[tuple[Any, ...]]]:
    with db.read() as session:
        return {model.__tablename__: {tuple(row) for row in session.execute(
                    select(*model.__table__.columns))}
                for model in (DailyOutcome, DailyTokens, DailyLatency)}


def test_what_the_writers_keep_equals_a_recount(database: Database) -> None:
    clock = Clock()
    record_sample(database, clock)
    feedback = FeedbackRepository(database, clock=clock)
    feedback.vote(1, "U9", 1, "button")  # the old question: -1 by U9 becomes +1
    feedback.retract(2, "U1")  # one of two votes on the first recent answer taken back
    feedback.retract(2, "U2")  # ... and the other: that answer has no vote left
    kept = _snapshot(database)
    with database.write() as session:
        assert rebuild(session.connection()) == 7
    assert _snapshot(database) == kept
    with database.read() as session:
        outcomes = list(session.execute(select(DailyOutcome)).scalars())
    assert sum(o.questions for o in outcomes) == 7
    # Votes left, by hand: old +1; VPN -1 -1; fast "reset mfa" -1; expenses +1
    assert (sum(o.up for o in outcomes), sum(o.down for o in outcomes)) == (2, 3)
    assert sum(o.voted for o in outcomes) == 4


def test_the_overview_counts_every_question_of_the_window(database: Database) -> None:
    clock = Clock()
    record_sample(database, clock)
    today = clock.now.date()
    found = overview(database, today - timedelta(days=1), today)
    assert [d.total for d in found.days] == [6, 0]
    assert (found.statuses.answered, found.statuses.no_answer,
            found.statuses.degraded) == (3, 2, 1)
    assert (found.feedback.up, found.feedback.down, found.feedback.voted_answers) == (3, 3, 4)
    assert found.ab and [m.mode for m in found.modes] == ["accurate", "fast"]
    accurate, fast = found.modes
    assert (accurate.count, accurate.up, accurate.down, accurate.no_answer) == (4, 3, 2, 1)
    assert (fast.count, fast.up, fast.down, fast.no_answer) == (2, 0, 1, 1)
    total = next(s for s in found.latencies if s.stage == "total")
    assert total.count == 6
    # Recorded totals 1000 3000 2000 400 600 5000: the median lies between 1000 and 2000.
    assert 1000 * 0.95 <= total.p50_ms <= 2000 * 1.05
    whole = overview(database, today - timedelta(days=30), today)
    assert whole.statuses.total == 7 and whole.statuses.error == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_histogram_percentiles_are_within_five_percent(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.lognormvariate(7, 0.8) for _ in range(5000)]
    counts: dict[int, int] = {}
    for v in values:
        counts[bucket_of(v)] = counts.get(bucket_of(v), 0) + 1
    for q in (0.5, 0.95, 0.99):
        exact = percentile(values, q)
        assert exact is not None
        assert histogram_percentile(counts, q) == pytest.approx(exact, rel=0.05)


def test_buckets_hold_their_values() -> None:
    for ms in (0, 0.4, 1, 17, 999.9, 1000, 123456):
        low, high = bucket_bounds(bucket_of(ms))
        assert low <= ms < high
    assert histogram_percentile({}, 0.5) is None


def test_a_question_asked_during_a_first_sync_is_counted_apart_and_is_no_gap(
        database: Database) -> None:
    clock = Clock()
    record_sample(database, clock)
    InteractionRepository(database, clock=clock).record(
        answer("Where is the parking policy?", status=AnswerStatus.NOT_INDEXED,
               text=messages.NOT_INDEXED_YET))
    today = clock.now.date()
    found = overview(database, today - timedelta(days=1), today)
    assert (found.statuses.total, found.statuses.no_answer, found.statuses.not_indexed) == (
        7, 2, 1)
    assert build_report(database, clock=clock).statuses.not_indexed == 1
    gaps = gap_questions(database, clock.now - timedelta(days=2))
    assert "Where is the parking policy?" not in {g.question for g in gaps}
    assert sum(g.unanswered for g in gaps) == 2  # the sample's two no-answers still are
