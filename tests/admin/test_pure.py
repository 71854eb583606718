"""The console's pure parts: chart axes and escaping, gap grouping, cost, safe redirects."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from bot.admin.charts import Series, hbars, nice_top, stacked_bars
from bot.admin.console import safe_next, short_id, web_link
from bot.admin.gaps import GapIndexer, group_questions
from bot.admin.overview import day_cost
from bot.prices import price_of
from rag.embed import LocalEmbedder
from storage.columns import utc_now
from storage.console_docs import GapQuestion
from storage.console_overview import Day
from storage.db import Database
from storage.models import Interaction
from storage.question_vectors import stored
from tests.admin.seed import seed


@pytest.mark.parametrize(("value", "top"), [(31, 40), (7, 8), (0.3, 0.4), (1234, 2000),
                                            (100, 100), (0, 1.0), (9, 10)])
def test_axis_tops_are_round(value: float, top: float) -> None:
    assert nice_top(value) == pytest.approx(top)


def test_chart_labels_are_escaped_and_bars_scaled() -> None:
    svg = str(stacked_bars("<t>", ["<a>", "b"], [Series("<s>", [1, 3]), Series("x", [1, 1])]))
    assert "<t>" not in svg and "&lt;t&gt;" in svg and "&lt;a&gt;" in svg
    assert "&lt;s&gt;" in svg and "<s>" not in svg
    assert svg.count("<rect") == 4
    assert "<a>" not in str(hbars("arms", [("<a>", 1.0)]))


def _q(i: int, text: str) -> GapQuestion:
    return GapQuestion(i, text, datetime(2026, 1, 1, tzinfo=UTC), True)


def test_similar_questions_group_largest_first() -> None:
    questions = [_q(1, "a"), _q(2, "b"), _q(3, "a2"), _q(4, "a3"), _q(5, "c"), _q(6, "b2")]
    vectors = [[1, 0, 0], [0, 1, 0], [0.95, 0.05, 0], [0.9, 0.1, 0.1], [0, 0, 1], [0.1, 1, 0]]
    groups = group_questions(questions, vectors, threshold=0.8)
    assert [[q.id for q in g.questions] for g in groups] == [[1, 3, 4], [2, 6], [5]]


@pytest.mark.parametrize(("model", "price"), [("claude-haiku-5-5", (1.0, 5.0)),
                                              ("claude-sonnet-x", (3.0, 15.0)),
                                              ("gpt-9", (0.0, 0.0))])
def test_prices_by_longest_prefix(model: str, price: tuple[float, float]) -> None:
    prices = {"claude": (9.0, 9.0), "claude-haiku": (1.0, 5.0), "claude-sonnet": (3.0, 15.0)}
    assert price_of(model, prices) == price


def test_day_cost() -> None:
    day = Day(date(2026, 1, 1), tokens=[("claude-haiku-5", 2_000_000, 100_000),
                                        ("claude-sonnet-5", 1_000_000, 200_000)])
    prices = {"claude-haiku": (1.0, 5.0), "claude-sonnet": (3.0, 15.0)}
    assert day_cost(day, prices) == pytest.approx(2.0 + 0.5 + 3.0 + 3.0)


@pytest.mark.parametrize(("target", "expected"), [
    ("/admin/questions?x=1", "/admin/questions?x=1"), ("/admin", "/admin"),
    ("https://evil.example/admin/", "/admin/"), ("//evil.example/admin", "/admin/"),
    ("/administrator", "/admin/"), ("", "/admin/"), (None, "/admin/"), ("/", "/"),
    ("//", "/admin/")])
def test_safe_next(target: str | None, expected: str) -> None:
    assert safe_next(target) == expected


@pytest.mark.parametrize(("url", "expected"), [
    ("https://kb.example/a", "https://kb.example/a"), ("javascript:alert(1)", "#"),
    ("data:text/html,x", "#"), ("", "#")])
def test_links_are_http_only(url: str, expected: str) -> None:
    assert web_link(url) == expected


async def test_gap_questions_are_embedded_in_the_background_once(
        tmp_path: Path, embedder: LocalEmbedder) -> None:
    db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    db.upgrade()
    seed(db, 60, days=3, docs=5)  # no answer when i % 6 == 3, a thumbs-down when i % 21 == 0
    gaps = {i for i in range(1, 61) if i % 6 == 3 or i % 21 == 0}
    indexer = GapIndexer(db, embedder)
    assert await indexer.catch_up() == len(gaps)
    assert set(stored(db, list(range(1, 61)), embedder.name)) == gaps
    assert await indexer.catch_up() == 0  # nothing new: nothing embedded again
    with db.write() as session:
        session.add(Interaction(id=61, created_at=utc_now(), platform="web", question="q",
                                answer="a", status="no_answer", mode="fast"))
    assert await indexer.catch_up() == 1
    vector = stored(db, [61], embedder.name)[61]
    assert vector.shape == (embedder.dimension,)
    assert stored(db, [61], "another-model") == {}  # another model's space is missing
    db.dispose()


@pytest.mark.parametrize(("raw", "shown"), [
    ("19:3f2a5b6c7d8e9f0a1b2c3d4e5f6a7b8c@thread.tacv2", "19:3f2a5…@thread.tacv2"),
    ("C0HELP001", "C0HELP001"),
    ("a:1Xbq9cP2u4vZr7kLmN0oQsTuVwXyZ", "a:1Xbq9cP2u4vZr7kLmN…"),
])
def test_a_long_conversation_id_is_cut_to_what_tells_it_apart(raw: str, shown: str) -> None:
    assert short_id(raw) == shown
