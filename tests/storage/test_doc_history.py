"""The learned prior's history: a day of graded retrievals is kept and read as one tally."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

from sqlalchemy import select, text

from rag.prior import GradeTally, PriorConfig, evidence, multiplier
from rag.types import Candidate, GradeSource
from storage.db import Database
from storage.feedback import FeedbackRepository
from storage.grade_days import rebuild
from storage.interactions import InteractionRepository
from storage.models import DocumentGradeDay, table
from storage.overrides import HistoryOfDocuments
from tests.storage.builders import answer, cand

NOW = datetime(2026, 6, 1, 18, 0, tzinfo=UTC)
DAYS = 3
PER_DAY = 24


def record(database: Database, at: datetime, *candidates: Candidate) -> None:
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


def test_only_the_graders_whose_grades_are_evidence_are_counted(database: Database) -> None:
    # The heuristic's grade comes from the retrieval score the prior scales (rag.prior): it
    # would let a document's multiplier feed itself.
    at = NOW - timedelta(hours=2)
    record(database, at, cand("vpn", 0, score=0.9, source=GradeSource.HEURISTIC),
           cand("mfa", 0, rank=2, score=0.8, source=GradeSource.CACHE),
           cand("sso", 0, rank=3, source=GradeSource.FALLBACK))
    record(database, at, cand("vpn", 0, score=0.3, source=GradeSource.LLM),
           cand("vpn", 1, rank=2, score=0.95, source=GradeSource.HEURISTIC))
    history = HistoryOfDocuments(database, clock=lambda: NOW).for_documents(
        ["vpn", "mfa", "sso"])
    assert [t[:2] for t in history["vpn"].grades] == [(1, 0)]  # the LLM's 0.3 only
    assert [t[:2] for t in history["mfa"].grades] == [(1, 1)]
    assert history["sso"].grades == []


def test_days_are_utc_days(database: Database) -> None:
    # 19:00, 22:30 and 23:30 on 30 May in New York: one local day, two UTC ones (the last two
    # are 02:30 and 03:30 UTC on 31 May).
    new_york = timezone(timedelta(hours=-4))
    evening = datetime(2026, 5, 30, 19, 0, tzinfo=new_york)
    record(database, evening, cand("vpn", score=0.9))
    record(database, evening + timedelta(hours=3.5), cand("vpn", score=0.9))
    record(database, evening + timedelta(hours=4.5), cand("vpn", score=0.1))
    tallies = sorted(HistoryOfDocuments(database, clock=lambda: NOW).for_documents(["vpn"])
                     ["vpn"].grades, key=lambda t: t[2])
    assert tallies == [(1, 1, datetime(2026, 5, 30, 23, 0, tzinfo=UTC)),
                       (2, 1, datetime(2026, 5, 31, 3, 0, tzinfo=UTC))]


def _days(database: Database) -> list[tuple[object, ...]]:
    columns = table(DocumentGradeDay).c
    with database.read() as session:
        return sorted(tuple(row) for row in session.execute(select(
            columns.doc_id, columns.day, columns.graded, columns.relevant, columns.first_at,
            columns.last_at)))


def test_a_recount_from_stored_retrievals_gives_the_recorded_tallies(database: Database
                                                                   ) -> None:
    for n in range(40):
        at = NOW - timedelta(days=n % 3, hours=n % 7, minutes=n)
        record(database, at, cand("vpn", 0, score=(n % 10) / 10, cited=True),
               cand("vpn", 1, rank=2, score=0.55), cand(f"doc-{n % 4}", rank=3, score=0.6),
               cand("slow", rank=4, score=0.9, source=GradeSource.HEURISTIC))
    recorded = _days(database)
    assert len(recorded) == 3 * 5  # vpn and doc-0..3, on three days; "slow" never
    with database.engine.begin() as connection:
        assert rebuild(connection) == 80  # vpn's and one doc-N's grade in each of 40 answers
    assert _days(database) == recorded


def test_the_migration_counts_what_was_stored_before_it(db_url: str) -> None:
    db = Database(db_url)
    db.upgrade("0009")
    day1, day2 = datetime(2026, 5, 20, 9, 0), datetime(2026, 5, 21, 17, 30)
    rows = [  # (interaction, created_at, doc, grade, grader)
        (1, day1, "vpn", 0.9, "llm"), (1, day1, "vpn", 0.2, "llm"),  # one answer: best 0.9
        (2, day1 + timedelta(hours=3), "vpn", 0.4, "cache"),
        (3, day1 + timedelta(hours=5), "vpn", 0.95, "heuristic"),  # not evidence
        (4, day2, "vpn", None, "fallback"),  # the grader failed
        (4, day2, "mfa", 0.7, "llm"),
    ]
    with db.engine.begin() as connection:
        for interaction, at in sorted({(r[0], r[1]) for r in rows}):
            connection.execute(text(
                "INSERT INTO interactions (id, created_at, platform, workspace, channel, "
                "thread, user_id, correlation_id, question, search_query, answer, status, "
                "mode, ab_arm, policy, timings_ms, usage, models) VALUES (:id, :at, 'slack', "
                "'', '', '', '', '', 'q', '', 'a', 'answered', 'accurate', '', '', '{}', '{}', "
                "'{}')"), {"id": interaction, "at": at})
        for n, (interaction, _, doc, grade, grader) in enumerate(rows):
            connection.execute(text(
                "INSERT INTO interaction_sources (interaction_id, rank, chunk_id, doc_id, "
                "title, url, retrieval_score, grade_score, grade_reason, grade_source, "
                "selected, cited) VALUES (:i, :rank, :chunk, :doc, '', '', 0.5, :grade, '', "
                ":grader, false, false)"),
                {"i": interaction, "rank": n, "chunk": f"{doc}#{n}", "doc": doc,
                 "grade": grade, "grader": grader})
    db.upgrade()
    utc = UTC
    assert _days(db) == [
        ("mfa", date(2026, 5, 21), 1, 1, day2.replace(tzinfo=utc), day2.replace(tzinfo=utc)),
        ("vpn", date(2026, 5, 20), 2, 1, day1.replace(tzinfo=utc),
         (day1 + timedelta(hours=3)).replace(tzinfo=utc)),
    ]
    db.dispose()


def test_votes_are_read_as_people_cast_change_and_take_them_back(database: Database) -> None:
    at = NOW - timedelta(days=2)
    feedback = FeedbackRepository(database, clock=lambda: at)
    first = InteractionRepository(database, clock=lambda: at).record(answer(candidates=[
        cand("vpn", 0, rank=1, score=0.9, cited=True), cand("vpn", 1, rank=2, cited=True),
        cand("mfa", rank=3, score=0.9, cited=True), cand("sso", rank=4, score=0.9)]))
    second = InteractionRepository(database, clock=lambda: at).record(answer(candidates=[
        cand("vpn", rank=1, score=0.9, cited=True)]))

    def votes(doc: str) -> list[tuple[str, int, datetime]]:
        return sorted(HistoryOfDocuments(database, clock=lambda: NOW)
                      .for_documents([doc])[doc].votes)

    feedback.vote(first, "alice", 1, "reaction")
    feedback.vote(first, "bob", -1, "button")
    feedback.vote(second, "alice", -1, "button")
    # Once per cited document, however many of its chunks were cited; never an uncited one.
    assert votes("vpn") == [("alice", -1, at), ("alice", 1, at), ("bob", -1, at)]
    assert votes("mfa") == [("alice", 1, at), ("bob", -1, at)]
    assert votes("sso") == []

    at = NOW - timedelta(days=1)
    feedback.vote(first, "bob", 1, "reaction")  # bob changes his mind
    assert votes("mfa") == [("alice", 1, NOW - timedelta(days=2)), ("bob", 1, at)]
    at = NOW - timedelta(hours=5)
    feedback.add_comment(first, "alice", "it was the old portal")  # touches alice's vote
    assert votes("mfa") == [("alice", 1, at), ("bob", 1, NOW - timedelta(days=1))]
    feedback.retract(first, "alice")
    assert votes("mfa") == [("bob", 1, NOW - timedelta(days=1))]
    assert not feedback.retract_matching(first, "bob", -1, "reaction")  # not his vote now
    assert feedback.retract_matching(first, "bob", 1, "reaction")
    assert votes("mfa") == []
    assert votes("vpn") == [("alice", -1, NOW - timedelta(days=2))]


def test_the_vote_migration_copies_stored_votes_per_cited_document(db_url: str) -> None:
    db = Database(db_url)
    db.upgrade("0010")
    voted = datetime(2026, 5, 20, 9, 0)
    with db.engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO interactions (id, created_at, platform, workspace, channel, thread, "
            "user_id, correlation_id, question, search_query, answer, status, mode, ab_arm, "
            "policy, timings_ms, usage, models) VALUES (7, :at, 'slack', '', '', '', '', '', "
            "'q', '', 'a', 'answered', 'accurate', '', '', '{}', '{}', '{}')"), {"at": voted})
        for rank, (doc, cited) in enumerate([("vpn", True), ("vpn", True), ("mfa", True),
                                             ("sso", False)]):
            connection.execute(text(
                "INSERT INTO interaction_sources (interaction_id, rank, chunk_id, doc_id, "
                "title, url, retrieval_score, grade_reason, selected, cited) VALUES (7, :rank, "
                ":chunk, :doc, '', '', 0.5, '', false, :cited)"),
                {"rank": rank, "chunk": f"{doc}#{rank}", "doc": doc, "cited": cited})
        for user, vote in (("alice", 1), ("bob", -1)):
            connection.execute(text(
                "INSERT INTO feedback (interaction_id, user_id, vote, channel, created_at, "
                "updated_at) VALUES (7, :user, :vote, 'reaction', :at, :at)"),
                {"user": user, "vote": vote, "at": voted})
    db.upgrade()
    history = HistoryOfDocuments(db, clock=lambda: NOW).for_documents(["vpn", "mfa", "sso"])
    at = voted.replace(tzinfo=UTC)
    assert {doc: sorted(h.votes) for doc, h in history.items()} == {
        "vpn": [("alice", 1, at), ("bob", -1, at)], "mfa": [("alice", 1, at), ("bob", -1, at)],
        "sso": []}
    db.dispose()
