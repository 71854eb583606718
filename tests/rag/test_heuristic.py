"""The heuristic grader prefers candidates that cover the question's terms and phrases."""

from __future__ import annotations

import pytest

from rag.heuristic import HeuristicGrader, heuristic_score, terms
from rag.types import Candidate, GradeSource
from tests.rag.builders import chunk


def cand(title: str, text: str, retrieval: float = 0.5) -> Candidate:
    return Candidate(1, chunk("d", title, text), retrieval)


def test_terms_drop_stopwords_and_keep_technical_tokens() -> None:
    assert terms("How do I rotate the staging DB credentials in vault-v2?") == [
        "rotate", "staging", "db", "credentials", "vault-v2"]


@pytest.mark.parametrize(("better", "worse"), [
    (cand("Staging DB credentials", "Rotate the staging database credentials with Vault."),
     cand("Holiday policy", "Staff get 25 days of holiday.")),
    (cand("Rotation", "To rotate staging credentials run the job."),
     cand("Rotation", "Credentials are secrets.")),
    (cand("Credentials", "rotate staging credentials", retrieval=0.9),
     cand("Credentials", "rotate staging credentials", retrieval=0.1)),
])
def test_better_candidate_scores_higher(better: Candidate, worse: Candidate) -> None:
    question = "how do I rotate staging credentials?"
    assert heuristic_score(question, better)[0] > heuristic_score(question, worse)[0]


def test_scores_are_bounded_and_reasons_say_heuristic() -> None:
    score, reason = heuristic_score("vpn", cand("VPN", "vpn vpn vpn", retrieval=5.0))
    assert 0.0 <= score <= 1.0 and reason.startswith("heuristic:")
    assert heuristic_score("the of and", cand("x", "y"))[0] == 0.0


async def test_grader_labels_its_grades_heuristic() -> None:
    result = await HeuristicGrader().grade("vpn setup", [cand("VPN setup", "Install WireGuard.")])
    (grade,) = result.grades.values()
    assert grade.source is GradeSource.HEURISTIC and grade.score and grade.score > 0.5
