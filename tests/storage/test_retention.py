"""Retention: `sift db purge` durations and what a purge removes and keeps."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from rag.ports import GradeKey
from rag.types import Grade, GradeSource
from storage.answers import APPROVED, REJECTED, AnswerDrafts, NewDraft
from storage.db import Database
from storage.dedupe import DedupeRepository
from storage.errors import UnknownInteraction
from storage.feedback import FeedbackRepository
from storage.grade_cache import GradeCacheRepository
from storage.history import HistoryRepository
from storage.interactions import InteractionRepository
from storage.models import (
    AnswerDraft,
    Base,
    DocumentStats,
    Feedback,
    HelpQuestion,
    Interaction,
    InteractionSource,
)
from storage.outcomes import HelpOutcomes
from storage.overrides import HistoryOfDocuments
from storage.retention import PurgeCounts, Retention, parse_duration
from storage.sync_state import SyncStateRepository
from sync.ports import RunCounts
from tests.storage.builders import answer, cand
from tests.storage.clock import Clock


@pytest.mark.parametrize(("text", "expected"), [
    ("90d", timedelta(days=90)), ("12h", timedelta(hours=12)), ("30m", timedelta(minutes=30)),
    ("2w", timedelta(weeks=2)), ("45s", timedelta(seconds=45)), (" 1.5D ", timedelta(hours=36)),
])
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "90", "d", "90 days", "-5d", "0d", "1y", "ninety d"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def _count(db: Database, model: type[Base]) -> int:
    with db.read() as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def _stats(db: Database) -> dict[str, tuple[int, int, int, int]]:
    with db.read() as session:
        return {s.doc_id: (s.retrieved, s.cited, s.thumbs_up, s.thumbs_down)
                for s in session.scalars(select(DocumentStats))}


def test_purge_removes_old_history_and_keeps_document_totals(database: Database) -> None:
    clock = Clock()
    interactions = InteractionRepository(database, clock=clock)
    feedback = FeedbackRepository(database, clock=clock)
    history = HistoryRepository(database, clock=clock)
    sync = SyncStateRepository(database, clock=clock)
    cited = [cand("mfa", 0, score=0.9, selected=True, cited=True),
             cand("vpn", 0, rank=2, score=0.2)]

    old = interactions.record(answer("old question", cited))
    feedback.vote(old, "U1", -1, "reaction")
    history.append("conv", [("user", "old turn")], keep=10)
    run = sync.start_run("kb", full=True)
    sync.finish_run(run, RunCounts(), [], status="ok")  # the checkpoint: kept
    failed = sync.start_run("kb", full=False)
    sync.finish_run(failed, RunCounts(), ["x"], status="failed")
    DedupeRepository(database, clock=clock).claim("ev-old", 3600)
    GradeCacheRepository(database, ttl=timedelta(days=365), clock=clock).put_many(
        {GradeKey("q", "mfa#0", "h", "g1"): Grade(0.9, "r", GradeSource.LLM)})

    clock.advance(days=100)
    new = interactions.record(answer("new question", cited))
    feedback.vote(new, "U2", 1, "button")
    history.append("conv", [("assistant", "new turn")], keep=10)
    before = _stats(database)
    assert before == {"mfa": (2, 2, 1, 1), "vpn": (2, 0, 0, 0)}
    learned = HistoryOfDocuments(database, clock=clock).for_documents(["mfa", "vpn"])
    assert [t[:2] for t in learned["mfa"].grades] == [(1, 1), (1, 1)]

    counts = Retention(database, clock=clock).purge(timedelta(days=90))

    assert counts == PurgeCounts(interactions=1, sources=2, feedback=1, conversation_turns=1,
                                 sync_runs=1, event_keys=1, grades=1)
    with database.read() as session:
        assert session.scalars(select(Interaction.id)).all() == [new]
        assert set(session.scalars(select(InteractionSource.interaction_id))) == {new}
        assert session.scalars(select(Feedback.interaction_id)).all() == [new]
    assert history.recent("conv", 10) == [("assistant", "new turn")]
    assert [r.id for r in sync.runs("kb")] == [run]
    assert sync.last_success("kb") is not None
    # Totals survive, and the purged answer can no longer move them; the learned prior keeps
    # the old day's graded retrievals (counts, no personal data) but not the purged vote.
    assert _stats(database) == before
    kept = HistoryOfDocuments(database, clock=clock).for_documents(["mfa", "vpn"])
    assert kept["mfa"].grades == learned["mfa"].grades
    assert kept["vpn"].grades == learned["vpn"].grades
    assert sorted(vote for _, vote, _ in learned["mfa"].votes) == [-1, 1]
    assert [vote for _, vote, _ in kept["mfa"].votes] == [1]
    with pytest.raises(UnknownInteraction):
        feedback.retract(old, "U1")
    assert _stats(database) == before
    assert Retention(database, clock=clock).purge(timedelta(days=90)) == PurgeCounts()


def test_purge_with_nothing_old(database: Database) -> None:
    InteractionRepository(database).record(answer("fresh", [cand("a", score=0.5)]))
    assert Retention(database).purge(timedelta(days=90)) == PurgeCounts()
    assert _count(database, Interaction) == 1


def test_purge_removes_old_help_questions_and_rejected_drafts(database: Database) -> None:
    clock = Clock()
    outcomes, drafts = HelpOutcomes(database, clock), AnswerDrafts(database, clock)

    def draft(ref: str) -> int:
        stored, _ = drafts.add(NewDraft(
            "reaction", "slack", "T1", "C1", "it-help", "public", "1.0", ref, "U1", "U2",
            "Dana", clock(), "https://slack.example/p1", "how?", "like this", "like this",
            "", ("public",)))
        return stored.id

    outcomes.asked("slack", "C1", "1.0", "U1", "sift")
    rejected, approved, pending = draft("2.0"), draft("3.0"), draft("4.0")
    drafts.review(rejected, REJECTED, "admin", reason="wrong")
    drafts.review(approved, APPROVED, "admin")
    clock.advance(days=100)
    outcomes.asked("slack", "C1", "5.0", "U3", "holdout")

    counts = Retention(database, clock=clock).purge(timedelta(days=90))

    assert (counts.help_questions, counts.rejected_drafts) == (1, 1)
    with database.read() as session:
        assert session.scalars(select(HelpQuestion.thread)).all() == ["5.0"]
        # Approved answers are documents and pending ones await review: both are kept.
        assert sorted(session.scalars(select(AnswerDraft.id))) == [approved, pending]
