"""Event dedupe and conversation history: the chat adapters' small stores."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from storage.db import Database
from storage.dedupe import DedupeRepository
from storage.history import HistoryRepository
from tests.storage.clock import Clock


def test_first_claim_wins_until_it_expires(database: Database) -> None:
    clock = Clock()
    dedupe = DedupeRepository(database, clock=clock)
    assert dedupe.claim("slack:Ev1", 60) is True
    assert dedupe.claim("slack:Ev1", 60) is False
    assert dedupe.claim("slack:Ev2", 60) is True
    clock.advance(seconds=59)
    assert dedupe.claim("slack:Ev1", 60) is False
    clock.advance(seconds=1)
    assert dedupe.claim("slack:Ev1", 60) is True  # expired: the next delivery is new work
    assert dedupe.claim("slack:Ev1", 60) is False
    clock.advance(seconds=60)
    assert dedupe.prune() == 2


def test_claims_hold_across_database_instances(sqlite_path: str) -> None:
    # Two processes (or a restart) on the same file see each other's claims.
    first, second = Database(f"sqlite:///{sqlite_path}"), Database(f"sqlite:///{sqlite_path}")
    first.upgrade()
    assert DedupeRepository(first).claim("teams:act-1", 3600) is True
    assert DedupeRepository(second).claim("teams:act-1", 3600) is False
    first.dispose()
    restarted = Database(f"sqlite:///{sqlite_path}")
    assert DedupeRepository(restarted).claim("teams:act-1", 3600) is False
    assert DedupeRepository(restarted).claim("teams:act-2", 3600) is True
    second.dispose()
    restarted.dispose()


def test_racing_claimants_have_exactly_one_winner(db_url: str, database: Database) -> None:
    handles = [database] * 4 + [Database(db_url) for _ in range(4)]
    start = threading.Barrier(len(handles))

    def claim(db: Database) -> list[bool]:
        start.wait()
        return [DedupeRepository(db).claim(f"event-{i}", 3600) for i in range(10)]

    with ThreadPoolExecutor(len(handles)) as pool:
        results = list(pool.map(claim, handles))
    for i in range(10):
        assert sum(r[i] for r in results) == 1
    for db in handles[4:]:
        db.dispose()


def test_history_is_bounded_and_oldest_first(database: Database) -> None:
    history = HistoryRepository(database)
    for i in range(5):
        role = "user" if i % 2 == 0 else "assistant"
        history.append("slack:C1:171.1", [(role, f"t{i}")], keep=3)
    history.append("slack:C2:9.9", [("user", "elsewhere")], keep=3)
    assert history.recent("slack:C1:171.1", 10) == [("user", "t2"), ("assistant", "t3"),
                                                    ("user", "t4")]
    assert history.recent("slack:C1:171.1", 2) == [("assistant", "t3"), ("user", "t4")]
    assert history.recent("slack:C2:9.9", 10) == [("user", "elsewhere")]
    assert history.recent("nothing", 10) == []


@pytest.mark.parametrize(("keep", "n", "expected"), [
    (0, 5, []), (1, 5, [("assistant", "b")]), (5, 0, []),
])
def test_history_edges(database: Database, keep: int, n: int,
                       expected: list[tuple[str, str]]) -> None:
    history = HistoryRepository(database)
    history.append("k", [("user", "a")], keep=keep)
    history.append("k", [("assistant", "b")], keep=keep)
    assert history.recent("k", n) == expected


def test_a_question_and_its_answer_are_stored_together_or_not_at_all(
        database: Database) -> None:
    history = HistoryRepository(database)
    history.append("k", [("user", "how do I set up the VPN?"), ("assistant", "Install it [1].")])
    assert history.recent("k", 10) == [("user", "how do I set up the VPN?"),
                                       ("assistant", "Install it [1].")]
    # The answer's turn cannot be stored (no text): the question's is not stored either.
    with pytest.raises(IntegrityError):
        history.append("k", [("user", "and on macOS?"),
                             ("assistant", None)])  # type: ignore[list-item]
    assert history.recent("k", 10) == [("user", "how do I set up the VPN?"),
                                       ("assistant", "Install it [1].")]


def test_history_without_stored_text_lives_only_its_max_age(database: Database) -> None:
    clock = Clock()
    history = HistoryRepository(database, max_age=timedelta(hours=24), clock=clock)
    history.append("slack:C1:1.1", [("user", "old question")])
    clock.advance(hours=23)
    history.append("slack:C1:1.1", [("assistant", "newer answer")])
    assert history.recent("slack:C1:1.1", 10) == [("user", "old question"),
                                                  ("assistant", "newer answer")]
    clock.advance(hours=2)  # the first turn is now 25 hours old
    assert history.recent("slack:C1:1.1", 10) == [("assistant", "newer answer")]
    history.append("teams:other", [("user", "hello")])  # any append sweeps every conversation
    with database.read() as session:
        texts = {t for (t,) in session.execute(text("SELECT text FROM conversation_turns"))}
    assert texts == {"newer answer", "hello"}
