"""The heuristic grader prefers candidates that cover the question's rare terms and phrases,
grading a pool together: term rarity and the retrieval score are relative to the pool."""

from __future__ import annotations

import math

import pytest

from rag.heuristic import HeuristicGrader, heuristic_scores, term_weights, terms
from rag.types import Candidate, GradeSource
from tests.rag.builders import chunk


def cand(doc: str, title: str, text: str, retrieval: float = 0.5) -> Candidate:
    return Candidate(1, chunk(doc, title, text), retrieval)


def test_terms_drop_stopwords_and_keep_technical_tokens() -> None:
    assert terms("How do I rotate the staging DB credentials in vault-v2?") == [
        "rotate", "staging", "db", "credentials", "vault-v2"]


@pytest.mark.parametrize(("stem", "expected"), [
    ("everywhere", math.log(2)),  # in all 3 documents: log(1 + 4/4)
    ("once", math.log(3)),  # in 1 of 3: log(1 + 4/2)
    ("nowhere", math.log(5)),  # in none: log(1 + 4/1), the heaviest
])
def test_term_weights_are_an_idf_over_the_pool(stem: str, expected: float) -> None:
    documents = [frozenset({"everywhere", "once"}), frozenset({"everywhere"}),
                 frozenset({"everywhere"})]
    assert term_weights(["everywhere", "once", "nowhere"], documents)[stem] == \
        pytest.approx(expected)


QUESTION = "how do I rotate staging credentials?"
FILLER = [cand(f"f{i}", "Notes", "credentials staging are stored") for i in range(3)]
CASES = [
    # name, pool graded together, the index that must score higher, the index that must not
    ("coverage", [cand("a", "Staging", "Rotate the staging credentials with Vault."),
                  cand("b", "Holiday policy", "Staff get 25 days of holiday.")], 0, 1),
    ("exact phrase", [cand("a", "Rotation", "To rotate staging credentials run the job."),
                      cand("b", "Rotation", "Credentials for staging: rotate them.")], 0, 1),
    ("retrieval score", [cand("a", "C", "rotate staging credentials", retrieval=0.9),
                         cand("b", "C", "rotate staging credentials", retrieval=0.1)], 0, 1),
    ("title", [cand("a", "Rotate credentials", "staging"),
               cand("b", "Overview", "rotate credentials staging")], 0, 1),
    # every document says "credentials staging"; only one says the rare "rotate"
    ("the rare term decides", [cand("a", "N", "rotate credentials"),
                               cand("b", "N", "staging credentials"), *FILLER], 0, 1),
]


@pytest.mark.parametrize(("name", "pool", "better", "worse"), CASES, ids=[c[0] for c in CASES])
def test_better_candidate_scores_higher(name: str, pool: list[Candidate], better: int,
                                        worse: int) -> None:
    scores = [s for s, _ in heuristic_scores(QUESTION, pool)]
    assert scores[better] > scores[worse]


def test_the_retrieval_score_counts_relative_to_the_best_in_the_pool() -> None:
    def pool(scale: float) -> list[Candidate]:
        return [cand("a", "C", "rotate staging", retrieval=0.8 * scale),
                cand("b", "C", "credentials", retrieval=0.4 * scale)]

    assert heuristic_scores(QUESTION, pool(1.0)) == heuristic_scores(QUESTION, pool(0.1))


def test_a_term_no_candidate_contains_lowers_every_grade() -> None:
    pool = [cand("a", "Rotation", "rotate staging credentials")]
    (plain, _), = heuristic_scores(QUESTION, pool)
    (harder, _), = heuristic_scores(QUESTION + " with kubernetes", pool)
    assert harder < plain


def test_scores_are_bounded_and_reasons_say_heuristic() -> None:
    (score, reason), = heuristic_scores("vpn", [cand("d", "VPN", "vpn vpn vpn", retrieval=5.0)])
    assert 0.0 <= score <= 1.0 and reason.startswith("heuristic:")
    assert heuristic_scores("the of and", [cand("d", "x", "y")])[0][0] == 0.0
    assert heuristic_scores("vpn", []) == []


async def test_grader_labels_its_grades_heuristic() -> None:
    pool = [cand("d", "VPN setup", "Install WireGuard."), cand("e", "Holiday", "Days off.")]
    result = await HeuristicGrader().grade("vpn setup", pool)
    assert set(result.grades) == {"kb:d:0", "kb:e:0"}
    assert all(g.source is GradeSource.HEURISTIC for g in result.grades.values())
    grade = result.grades["kb:d:0"]
    assert grade.score is not None and grade.score > 0.5
