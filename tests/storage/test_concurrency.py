"""Eight writers recording and voting on the same documents end with exact counters."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import select

from rag.types import Answer
from storage.db import Database
from storage.feedback import FeedbackRepository
from storage.interactions import InteractionRepository
from storage.models import DocumentGradeDay, DocumentStats
from tests.storage.builders import answer, cand

THREADS = 8
ROUNDS = 5


def _cited_answer(question: str) -> Answer:
    return answer(question, [cand("doc-a", 0, rank=1, score=0.9, selected=True, cited=True),
                             cand("doc-b", 0, rank=2, score=0.8, selected=True, cited=True),
                             cand("doc-c", 0, rank=3, score=0.3)])


def _writer(db: Database, t: int, shared: int, start: threading.Barrier) -> None:
    interactions = InteractionRepository(db)
    feedback = FeedbackRepository(db)
    start.wait()
    for i in range(ROUNDS):
        iid = interactions.record(_cited_answer(f"question {t}.{i}"))
        feedback.vote(iid, "alice", 1, "reaction")
        feedback.vote(iid, "bob", -1, "button")
        feedback.vote(iid, "bob", 1, "button")  # replaces bob's thumbs-down
        feedback.vote(iid, "carol", -1, "reaction")
        feedback.retract(iid, "carol")
        # Everyone also fights over one shared answer.
        feedback.vote(shared, f"user-{t}", -1, "reaction")
        feedback.vote(shared, f"user-{t}", 1, "reaction")
        feedback.vote(shared, "mallory", 1 if (t + i) % 2 else -1, "reaction")


def test_concurrent_records_and_votes_keep_exact_counters(db_url: str, database: Database
                                                         ) -> None:
    shared = InteractionRepository(database).record(_cited_answer("shared"))
    # Half the writers share the engine (threads of one process), half bring their own
    # Database (like separate processes on the same file or server).
    own = [Database(db_url) for _ in range(THREADS // 2)]
    handles = [database] * (THREADS - len(own)) + own
    start = threading.Barrier(THREADS)
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(_writer, db, t, shared, start) for t, db in enumerate(handles)]
        for future in futures:
            future.result()
    for db in own:
        db.dispose()

    mallory = FeedbackRepository(database).votes(shared)["mallory"]
    recorded = 1 + THREADS * ROUNDS
    with database.read() as session:
        stats = {s.doc_id: s for s in session.scalars(select(DocumentStats))}
    ups = THREADS * ROUNDS * 2 + THREADS + (mallory == 1)
    for doc in ("doc-a", "doc-b"):
        s = stats[doc]
        assert (s.retrieved, s.graded, s.graded_relevant, s.selected, s.cited) == (
            recorded, recorded, recorded, recorded, recorded)
        assert (s.thumbs_up, s.thumbs_down) == (ups, int(mallory == -1))
    c = stats["doc-c"]
    assert (c.retrieved, c.graded, c.graded_relevant, c.selected, c.cited) == (
        recorded, recorded, 0, 0, 0)
    assert round(c.grade_score_sum, 6) == round(0.3 * recorded, 6)
    assert (c.thumbs_up, c.thumbs_down) == (0, 0)
    # The learned prior's day tallies add up too (one day: the test runs in seconds, barring
    # a run across midnight UTC, which would split them over two).
    with database.read() as session:
        days = session.execute(select(DocumentGradeDay.doc_id, DocumentGradeDay.graded,
                                      DocumentGradeDay.relevant)).all()
    totals: dict[str, list[int]] = {}
    for doc, graded, relevant in days:
        total = totals.setdefault(doc, [0, 0])
        total[0] += graded
        total[1] += relevant
    assert totals == {"doc-a": [recorded, recorded], "doc-b": [recorded, recorded],
                      "doc-c": [recorded, 0]}
