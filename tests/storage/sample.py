"""A small recorded history whose report numbers are derived by hand in test_report.py."""

from __future__ import annotations

from rag.types import AnswerStatus, Candidate, GradeSource, Mode
from storage.db import Database
from storage.feedback import FeedbackRepository
from storage.interactions import InteractionRepository
from storage.sync_state import SyncStateRepository
from tests.storage.builders import answer, cand
from tests.storage.clock import Clock

Q = tuple[str, AnswerStatus, Mode, float, float, list[Candidate], dict[str, int]]

# question, status, mode, total ms, retrieve ms, candidates, votes
RECENT: list[Q] = [
    ("How do I reset MFA?", AnswerStatus.ANSWERED, Mode.ACCURATE, 1000, 100,
     [cand("mfa", score=0.9, selected=True, cited=True), cand("legacy-vpn", rank=2, score=0.2)],
     {"U1": 1, "U2": 1}),
    ("VPN keeps disconnecting", AnswerStatus.ANSWERED, Mode.ACCURATE, 3000, 300,
     [cand("vpn", score=0.7, selected=True, cited=True), cand("legacy-vpn", rank=2, score=0.3)],
     {"U1": -1, "U2": -1}),
    ("What is the parking policy?", AnswerStatus.NO_ANSWER, Mode.ACCURATE, 2000, 200,
     [cand("legacy-vpn", score=0.1), cand("parking-old", rank=2, score=0.45)], {}),
    ("how do i reset mfa", AnswerStatus.ANSWERED, Mode.FAST, 400, 100,
     [cand("mfa", score=0.8, selected=True, cited=True, source=GradeSource.HEURISTIC)],
     {"U3": -1}),
    ("What is the parking policy", AnswerStatus.NO_ANSWER, Mode.FAST, 600, 150,
     [cand("parking-old", score=0.35, source=GradeSource.HEURISTIC)], {}),
    ("Expense limits?", AnswerStatus.DEGRADED, Mode.ACCURATE, 5000, 500,
     [cand("expenses", score=0.8, selected=True, cited=True),
      cand("legacy-vpn", rank=2, score=0.4)], {"U1": 1}),
]
OLD: Q = ("Old question", AnswerStatus.ERROR, Mode.ACCURATE, 9000, 900,
          [cand("parking-old", score=0.6)], {"U9": -1})
SYNCED = ["mfa", "vpn", "legacy-vpn", "parking-old", "expenses", "holidays", "onboarding"]


def _record(interactions: InteractionRepository, feedback: FeedbackRepository, q: Q) -> int:
    text, status, mode, total, retrieve, candidates, votes = q
    iid = interactions.record(answer(text, candidates, status=status, mode=mode,
                                     timings={"retrieve": retrieve, "total": total}))
    for user, vote in votes.items():
        feedback.vote(iid, user, vote, "reaction")
    return iid


def record_sample(db: Database, clock: Clock) -> None:
    """One interaction ten days before `clock.now`, six in the last day; seven synced docs."""
    interactions = InteractionRepository(db, clock=clock)
    feedback = FeedbackRepository(db, clock=clock)
    end = clock.now
    clock.advance(days=-10)
    _record(interactions, feedback, OLD)
    clock.now = end
    clock.advance(days=-1)
    for q in RECENT:
        clock.advance(minutes=10)
        _record(interactions, feedback, q)
    clock.now = end
    sync = SyncStateRepository(db, clock=clock)
    for doc in SYNCED:
        sync.record_document("kb", doc, content_hash=f"h-{doc}", chunk_count=2, updated_at=None)
    sync.record_document("kb", "broken", content_hash="", chunk_count=0, updated_at=None,
                         status="failed", error="unreadable")
