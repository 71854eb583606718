"""The document prior's arithmetic: smoothing, bounds, decay, one voice per person, reranking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rag.prior import (
    Adjustment,
    Evidence,
    GradeTally,
    OverrideKind,
    PriorConfig,
    VoteEvent,
    decay,
    evidence,
    is_evidence,
    multiplier,
    override_adjustment,
    rerank,
    voter_evidence,
)
from rag.types import Candidate, Grade, GradeSource
from tests.rag.builders import chunk

NOW = datetime(2026, 6, 1, tzinfo=UTC)
CONFIG = PriorConfig()


def days(n: float) -> datetime:
    return NOW - timedelta(days=n)


@pytest.mark.parametrize(("name", "found", "low", "high"), [
    ("no evidence is neutral", Evidence(), 1.0, 1.0),
    ("two relevant retrievals barely move it", Evidence(2, 2), 1.0, 1.12),
    ("one vote barely moves it", Evidence(up=1), 1.0, 1.07),
    ("always relevant, many times, rises", Evidence(200, 200), 1.4, 1.4),
    ("never relevant, many times, falls", Evidence(200, 0), 0.7, 0.75),
    ("base-rate document stays neutral", Evidence(100, 30), 0.999, 1.001),
    # votes alone move a document by at most x1.22 (e^0.2) either way
    ("many up-voters raise it", Evidence(up=50), 1.15, 1.2215),
    ("many down-voters lower it", Evidence(down=50), 1 / 1.2215, 0.87),
    ("relevant but voted down: bounded below", Evidence(1000, 0, 0, 1000), 0.7, 0.7),
    ("relevant and voted up: bounded above", Evidence(1000, 1000, 1000, 0), 1.4, 1.4),
    ("votes cancel out", Evidence(up=20, down=20), 1.0, 1.0),
])
def test_multiplier_is_smoothed_and_bounded(name: str, found: Evidence, low: float,
                                            high: float) -> None:
    value = multiplier(found, CONFIG)
    assert low - 1e-9 <= value <= high + 1e-9, f"{name}: {value}"


def test_multiplier_is_monotonic_in_relevance() -> None:
    values = [multiplier(Evidence(50, k), CONFIG) for k in range(0, 51, 5)]
    assert values == sorted(values) and values[0] < 1 < values[-1]


def test_base_rate_decides_what_neutral_is() -> None:
    found = Evidence(100, 50)
    assert multiplier(found, CONFIG, base_rate=0.5) == pytest.approx(1.0)
    assert multiplier(found, CONFIG, base_rate=0.2) > 1.0


@pytest.mark.parametrize(("age_days", "weight"), [
    (0, 1.0), (90, 0.5), (180, 0.25), (-5, 1.0),
])
def test_decay_halves_every_half_life(age_days: float, weight: float) -> None:
    assert decay(days(age_days), NOW, 90) == pytest.approx(weight)


def test_old_evidence_moves_the_prior_less() -> None:
    fresh = [GradeTally.one(False, days(1)) for _ in range(100)]
    stale = [GradeTally.one(False, days(720)) for _ in range(100)]
    assert multiplier(evidence(fresh, [], NOW, CONFIG), CONFIG) < \
        multiplier(evidence(stale, [], NOW, CONFIG), CONFIG) < 1.0


@pytest.mark.parametrize(("name", "votes", "up", "down"), [
    ("one person voting forty times counts once",
     [VoteEvent("mallory", -1, days(0)) for _ in range(40)], 0.0, 1.0),
    ("three people count three times",
     [VoteEvent(u, 1, days(0)) for u in ("ann", "bob", "cy")], 3.0, 0.0),
    ("a person who voted both ways cancels out",
     [VoteEvent("ann", 1, days(0)), VoteEvent("ann", -1, days(0))], 0.0, 0.0),
    ("an old voter weighs less", [VoteEvent("ann", 1, days(90))], 0.5, 0.0),
    ("invalid votes are ignored", [VoteEvent("ann", 0, days(0))], 0.0, 0.0),
])
def test_voters_count_once_each(name: str, votes: list[VoteEvent], up: float,
                                down: float) -> None:
    assert voter_evidence(votes, NOW, 90) == pytest.approx((up, down)), name


def test_one_persistent_voter_cannot_sink_a_document() -> None:
    spam = [VoteEvent("mallory", -1, days(0)) for _ in range(500)]
    praise = [VoteEvent(f"user{i}", 1, days(0)) for i in range(3)]
    assert multiplier(evidence([], spam, NOW, CONFIG), CONFIG) > 0.93
    assert multiplier(evidence([], spam + praise, NOW, CONFIG), CONFIG) > 1.0


@pytest.mark.parametrize(("kind", "factor", "expected"), [
    (OverrideKind.BOOST, None, Adjustment(1.4)),
    (OverrideKind.BOOST, 2.0, Adjustment(2.0)),
    (OverrideKind.DEMOTE, None, Adjustment(0.7)),
    (OverrideKind.DEMOTE, 0.2, Adjustment(0.2)),
    (OverrideKind.PIN, None, Adjustment(1.0, pinned=True)),
    (OverrideKind.HIDE, None, None),
])
def test_overrides(kind: OverrideKind, factor: float | None,
                   expected: Adjustment | None) -> None:
    assert override_adjustment(kind, factor, CONFIG) == expected


def cands(*docs_scores: tuple[str, float]) -> list[Candidate]:
    return [Candidate(i, chunk(d, d, "t"), s) for i, (d, s) in enumerate(docs_scores, start=1)]


@pytest.mark.parametrize(("name", "adjust", "order"), [
    ("no adjustments keep the order", {}, ["a", "b", "c"]),
    ("a multiplier can overtake", {"c": Adjustment(1.4)}, ["c", "a", "b"]),
    ("a small multiplier cannot", {"c": Adjustment(1.05)}, ["a", "b", "c"]),
    ("demoted falls below both", {"a": Adjustment(0.7)}, ["b", "c", "a"]),
    ("pinned goes first whatever its score", {"c": Adjustment(1.0, pinned=True)},
     ["c", "a", "b"]),
])
def test_rerank(name: str, adjust: dict[str, Adjustment], order: list[str]) -> None:
    ranked = rerank(cands(("a", 1.0), ("b", 0.9), ("c", 0.8)), adjust)
    assert [c.chunk.doc_id for c in ranked] == order, name
    assert [c.rank for c in ranked] == [1, 2, 3]


@pytest.mark.parametrize(("grade", "counts"), [
    (Grade(0.9, "r", GradeSource.LLM), True),
    (Grade(0.1, "r", GradeSource.CACHE), True),
    (Grade(0.9, "r", GradeSource.HEURISTIC), False),  # derived from the scaled retrieval score
    (Grade(None, "grading failed", GradeSource.FALLBACK), False),
    (Grade(None, "r", GradeSource.LLM), False),
    (None, False),
])
def test_only_a_models_grades_count_as_evidence(grade: Grade | None, counts: bool) -> None:
    assert is_evidence(grade) is counts
