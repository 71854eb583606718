"""The history behind the learned prior: a day of graded retrievals is read as one tally."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rag.prior import GradeTally, PriorConfig, evidence, multiplier
from storage.db import Database
from storage.interactions import InteractionRepository
from storage.overrides import HistoryOfDocuments
from tests.storage.builders import answer, cand

NOW = datetime(2026, 6, 1, 18, 0, tzinfo=UTC)
DAYS = 3
PER_DAY = 24


def record(database: Database, at: datetime, *candidates: object) -> None:
    InteractionRepository(database, clock=lambda: at).record(answer(candidates=candidates))


def test_a_days_retrievals_come_back_as_one_tally(database: Database) -> None:
    events: list[tuple[bool, datetime]] = []
    for day in range(1, DAYS + 1):
        for n in range(PER_DAY):
            at = NOW - timedelta(days=day, hours=n / 3)  # eight hours of one day
            relevant = n % 4 != 0  # three in four relevant
            record(database, at, cand("vpn", score=0.9 if relevant else 0.2, cited=True))
            events.append((relevant, at))
    history = HistoryOfDocuments(database, clock=lambda: NOW).for_documents(["vpn", "new"])
    assert history["new"].grades == []
    tallies = sorted(history["vpn"].grades, key=lambda t: t[2])
    assert [(graded, relevant) for graded, relevant, _ in tallies] == [(PER_DAY, 18)] * DAYS
    for *_, at in tallies:
        same_day = [when for _, when in events if when.date() == at.date()]
        assert min(same_day) <= at <= max(same_day)
    # The prior from the tallies is the prior from every retrieval, to well within rounding.
    config = PriorConfig()
    exact = multiplier(evidence((GradeTally.one(r, at) for r, at in events), (), NOW, config),
                       config)
    summed = multiplier(evidence((GradeTally(*t) for t in tallies), (), NOW, config), config)
    assert exact != 1.0 and abs(summed - exact) < 1e-4


def test_two_chunks_of_a_document_in_one_answer_are_one_retrieval(database: Database) -> None:
    record(database, NOW - timedelta(hours=1),
           cand("vpn", 0, rank=1, score=0.9), cand("vpn", 1, rank=2, score=0.1),
           cand("holidays", 0, rank=3, score=0.1))
    history = HistoryOfDocuments(database, clock=lambda: NOW).for_documents(["vpn", "holidays"])
    assert [t[:2] for t in history["vpn"].grades] == [(1, 1)]  # its best chunk's grade
    assert [t[:2] for t in history["holidays"].grades] == [(1, 0)]


def test_retrievals_older_than_the_window_are_left_out(database: Database) -> None:
    record(database, NOW - timedelta(days=400), cand("vpn", score=0.9))
    record(database, NOW - timedelta(days=2), cand("vpn", score=0.9))
    history = HistoryOfDocuments(database, clock=lambda: NOW).for_documents(["vpn"])
    assert [t[:2] for t in history["vpn"].grades] == [(1, 1)]
