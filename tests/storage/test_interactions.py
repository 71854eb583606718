"""Recording answers: the interaction row, one row per candidate, document counters."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from rag.types import TERMINAL, AnswerStatus, GradeSource, Mode
from storage.columns import text_hash
from storage.db import Database
from storage.doc_stats import DocDelta, document_deltas
from storage.errors import UnknownInteraction
from storage.interactions import InteractionRepository
from storage.models import DocumentStats, Interaction, InteractionSource
from tests.storage.builders import answer, cand


def _stats(db: Database) -> dict[str, DocumentStats]:
    with db.read() as session:
        return {s.doc_id: s for s in session.scalars(select(DocumentStats))}


def test_record_stores_the_interaction_and_every_candidate(database: Database) -> None:
    repo = InteractionRepository(database)
    recorded = answer("How do I reset MFA?", [
        cand("mfa", 0, rank=1, score=0.9, selected=True, cited=True, retrieval=0.8),
        cand("mfa", 1, rank=2, score=0.4, selected=True),
        cand("vpn", 0, rank=3, source=GradeSource.FALLBACK),
        cand("wifi", 0, rank=4),
    ], timings={"retrieve": 120.5, "grade": 800.0, "total": 1500.25})
    iid = repo.record(recorded)
    row = repo.get(iid)
    assert row is not None
    assert (row.platform, row.workspace, row.channel, row.thread, row.user_id) == (
        "slack", "T1", "C1", "171.1", "U1")
    assert (row.question, row.search_query, row.answer) == (
        "How do I reset MFA?", "search: How do I reset MFA?", "Reset it in the portal [1].")
    assert (row.status, row.mode, row.correlation_id) == ("answered", "accurate", "cid-1")
    assert row.timings_ms == {"retrieve": 120.5, "grade": 800.0, "total": 1500.25}
    assert row.usage == {"grade": {"input_tokens": 1000, "output_tokens": 50,
                                   "cache_read_tokens": 800, "cache_write_tokens": 0,
                                   "calls": 3}}
    assert row.models == {"grade": "claude-haiku"}
    assert row.created_at.tzinfo is not None and row.created_at.utcoffset().total_seconds() == 0
    sources = [(s.rank, s.chunk_id, s.doc_id, s.retrieval_score, s.grade_score,
                s.grade_source, s.selected, s.cited) for s in repo.sources(iid)]
    assert sources == [
        (1, "mfa#0", "mfa", 0.8, 0.9, "llm", True, True),
        (2, "mfa#1", "mfa", 0.5, 0.4, "llm", True, False),
        (3, "vpn#0", "vpn", 0.5, None, "fallback", False, False),
        (4, "wifi#0", "wifi", 0.5, None, None, False, False),
    ]
    assert repo.sources(iid)[0].grade_reason == "reason mfa#0"


def test_record_counts_each_document_once_per_interaction(database: Database) -> None:
    repo = InteractionRepository(database, relevant_threshold=0.5)
    repo.record(answer("q1", [cand("mfa", 0, rank=1, score=0.9, selected=True, cited=True),
                              cand("mfa", 1, rank=2, score=0.3, selected=True),
                              cand("vpn", 0, rank=3, score=0.2)]))
    repo.record(answer("q2", [cand("vpn", 0, rank=1, score=0.6, selected=True),
                              cand("mfa", 2, rank=2, source=GradeSource.FALLBACK)],
                       status=AnswerStatus.NO_ANSWER))
    stats = _stats(database)
    counters = {d: (s.retrieved, s.graded, s.graded_relevant, round(s.grade_score_sum, 6),
                    s.selected, s.cited, s.thumbs_up, s.thumbs_down)
                for d, s in stats.items()}
    assert counters == {"mfa": (2, 1, 1, 0.9, 1, 1, 0, 0),
                        "vpn": (2, 2, 1, 0.8, 1, 0, 0, 0)}
    assert stats["mfa"].title == "Title of mfa" and stats["mfa"].url == "https://kb.example/mfa"
    assert stats["mfa"].last_seen >= stats["mfa"].first_seen


def test_the_heuristic_s_grades_are_counted_apart_from_a_model_s(database: Database) -> None:
    repo = InteractionRepository(database, relevant_threshold=0.5)
    repo.record(answer("q1", [cand("mfa", 0, rank=1, score=0.9),
                              cand("vpn", 0, rank=2, score=0.2, source=GradeSource.HEURISTIC)]))
    repo.record(answer("q2", [cand("mfa", 0, rank=1, score=0.1, source=GradeSource.HEURISTIC),
                              cand("vpn", 0, rank=2, score=0.7, source=GradeSource.CACHE)]))
    stats = _stats(database)
    every = {d: (s.graded, round(s.grade_score_sum, 6)) for d, s in stats.items()}
    model = {d: (s.model_graded, round(s.model_grade_sum, 6)) for d, s in stats.items()}
    assert every == {"mfa": (2, 1.0), "vpn": (2, 0.9)}
    assert model == {"mfa": (1, 0.9), "vpn": (1, 0.7)}  # a cached grade was a model's


def test_an_answer_without_candidates_is_recorded(database: Database) -> None:
    repo = InteractionRepository(database)
    iid = repo.record(answer("hello!", [], text="Hi there.", timings={}))
    assert repo.sources(iid) == []
    assert _stats(database) == {}


def test_store_text_off_keeps_only_hashes(database: Database) -> None:
    repo = InteractionRepository(database, store_text=False)
    iid = repo.record(answer("My password is hunter2, why?", [], text="Never share it."))
    row = repo.get(iid)
    assert row is not None
    assert row.question == text_hash("My password is hunter2, why?")
    assert row.answer == text_hash("Never share it.")
    assert row.search_query == text_hash("search: My password is hunter2, why?")
    assert row.question.startswith("sha256:") and len(row.question) == 7 + 64
    with database.read() as session:
        everything = " ".join(str(v) for v in session.execute(select(Interaction)).one())
    assert "hunter2" not in everything


def test_message_links(database: Database) -> None:
    repo = InteractionRepository(database)
    first = repo.record(answer("q1", platform="slack"))
    second = repo.record(answer("q2", platform="teams"))
    assert repo.find_by_message("slack", "C1", "171.5") is None
    repo.attach_message(first, "C1", "171.5")
    repo.attach_message(second, "19:conv@thread", "activity-9")
    assert repo.find_by_message("slack", "C1", "171.5") == first
    assert repo.find_by_message("teams", "19:conv@thread", "activity-9") == second
    assert repo.find_by_message("teams", "C1", "171.5") is None  # platform is part of the key


def test_attach_message_to_an_unknown_interaction(database: Database) -> None:
    repo = InteractionRepository(database)
    with pytest.raises(UnknownInteraction, match="No interaction with id 404"):
        repo.attach_message(404, "C1", "1.2")
    with database.read() as session:
        assert session.scalar(select(func.count()).select_from(Interaction)) == 0


def test_a_failed_record_writes_nothing(database: Database) -> None:
    # The second candidate's row violates NOT NULL after the interaction row was inserted;
    # the interaction, the first source and the stats must roll back with it.
    repo = InteractionRepository(database)
    broken = answer("q", [cand("mfa", 0, score=0.9), cand("vpn", 0, rank=2)])
    object.__setattr__(broken.candidates[1], "rank", None)
    with pytest.raises(Exception):  # noqa: B017 - any database error will do
        repo.record(broken)
    with database.read() as session:
        assert session.scalar(select(func.count()).select_from(Interaction)) == 0
        assert session.scalar(select(func.count()).select_from(InteractionSource)) == 0
    assert _stats(database) == {}


def test_modes_and_statuses_are_stored_as_their_values(database: Database) -> None:
    repo = InteractionRepository(database)
    iid = repo.record(answer("q", status=AnswerStatus.DEGRADED, mode=Mode.FAST,
                             platform=TERMINAL))
    row = repo.get(iid)
    assert row is not None and (row.status, row.mode, row.platform) == (
        "degraded", "fast", "terminal")


@pytest.mark.parametrize(("candidates", "cited_chunks", "expected"), [
    pytest.param([], set(), [], id="none"),
    pytest.param([cand("a", 0, score=0.5)], set(),
                 [DocDelta("a", "Title of a", "https://kb.example/a", True, True, 0.5, False,
                           False)], id="at-threshold-is-relevant"),
    pytest.param([cand("a", 0, score=0.49, selected=True)], set(),
                 [DocDelta("a", "Title of a", "https://kb.example/a", True, False, 0.49, True,
                           False)], id="below-threshold"),
    pytest.param([cand("b", 0, rank=2, score=0.2), cand("b", 1, rank=1, score=0.7)], {"b#0"},
                 [DocDelta("b", "Title of b", "https://kb.example/b", True, True, 0.7, False,
                           True)], id="best-chunk-and-citation-by-chunk-id"),
    pytest.param([cand("z", 0, source=GradeSource.FALLBACK), cand("a", 0)], set(),
                 [DocDelta("a", "Title of a", "https://kb.example/a", False, False, 0.0,
                           False, False),
                  DocDelta("z", "Title of z", "https://kb.example/z", False, False, 0.0,
                           False, False)], id="ungraded-sorted-by-doc"),
])
def test_document_deltas(candidates: list, cited_chunks: set[str],
                         expected: list[DocDelta]) -> None:
    assert document_deltas(candidates, cited_chunks, 0.5) == expected


def test_the_ab_arm_is_stored(database: Database) -> None:
    repo = InteractionRepository(database)
    split = repo.record(answer("q1", mode=Mode.FAST, ab_arm="fast"))
    chosen = repo.record(answer("q2", mode=Mode.FAST))
    with database.read() as session:
        arms = {i.id: i.ab_arm for i in session.scalars(select(Interaction))}
    assert arms == {split: "fast", chosen: ""}
