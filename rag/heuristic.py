"""A fast, honest heuristic grader: term coverage, exact phrases and title match, no LLM."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from rag.grade import GradingResult
from rag.types import Candidate, Grade, GradeSource

_WORD = re.compile(r"[\w][\w'.-]*[\w]|\w", re.UNICODE)
_STOPWORD_TEXT = """
a an and are as at be by can could do does for from get got has have how i i'm if in is it its
me my of on or our should so that the their them then there these this to us was we what when
where which who why will with would you your please need want tell know about into any
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# Weights: coverage of the question's terms matters most, the retrieval score carries what
# the index knows (vectors), phrases and titles break ties between near-equal candidates.
W_COVERAGE, W_RETRIEVAL, W_PHRASE, W_TITLE = 0.45, 0.30, 0.15, 0.10


def terms(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in STOPWORDS]


def _stem(word: str) -> str:
    # Plurals and simple verb forms should still count as a match ("rotate"/"rotating").
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _phrases(words: list[str]) -> list[str]:
    return [f"{a} {b}" for a, b in itertools.pairwise(words)]


def heuristic_score(question: str, candidate: Candidate) -> tuple[float, str]:
    """Score in [0, 1] and a one-sentence reason that says what matched."""
    asked = list(dict.fromkeys(terms(question)))
    if not asked:
        return 0.0, "heuristic: the question has no searchable terms."
    chunk = candidate.chunk
    body_words = terms(f"{chunk.title} {chunk.section} {chunk.text} {' '.join(chunk.tags)}")
    body_stems = {_stem(w) for w in body_words}
    covered = [w for w in asked if _stem(w) in body_stems]
    coverage = len(covered) / len(asked)
    body_text = " ".join(body_words)
    pairs = _phrases(asked)
    phrase = sum(1 for p in pairs if p in body_text) / len(pairs) if pairs else coverage
    title_stems = {_stem(w) for w in terms(chunk.title)}
    title = len([w for w in asked if _stem(w) in title_stems]) / len(asked)
    retrieval = min(1.0, max(0.0, candidate.retrieval_score))
    score = (W_COVERAGE * coverage + W_RETRIEVAL * retrieval + W_PHRASE * phrase
             + W_TITLE * title)
    reason = (f"heuristic: covers {len(covered)}/{len(asked)} question terms"
              f"{', title matches' if title > 0 else ''}"
              f"{', exact phrase found' if phrase > 0 else ''}.")
    return round(min(1.0, score), 4), reason


class HeuristicGrader:
    """For `fast` mode and for running without an LLM; its grades say they are heuristic."""

    async def grade(self, question: str, candidates: Sequence[Candidate]) -> GradingResult:
        result = GradingResult()
        for candidate in candidates:
            score, reason = heuristic_score(question, candidate)
            result.grades[candidate.chunk.chunk_id] = Grade(score, reason, GradeSource.HEURISTIC)
        return result
