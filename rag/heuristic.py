"""A fast, honest heuristic grader: weighted term coverage, phrases, titles, no LLM."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag.grade import GradingResult, Scoreboard
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


@dataclass(frozen=True)
class _Text:
    """One candidate's words, as the scoring needs them."""

    stems: frozenset[str]
    joined: str  # its words in order, for exact phrases
    title: frozenset[str]

    @classmethod
    def of(cls, candidate: Candidate) -> _Text:
        chunk = candidate.chunk
        words = terms(f"{chunk.title} {chunk.section} {chunk.text} {' '.join(chunk.tags)}")
        return cls(frozenset(map(_stem, words)), " ".join(words),
                   frozenset(_stem(w) for w in terms(chunk.title)))


def term_weights(asked: Sequence[str], documents: Sequence[frozenset[str]]) -> dict[str, float]:
    """An inverse document frequency over the candidates' documents, per asked stem.

    A term every candidate has tells them apart no better than a stopword; a rare one decides.
    A term no candidate has weighs most, so a question whose key term nothing contains grades
    low everywhere (it stays unanswerable rather than answered from the easy terms).
    """
    n = len(documents)
    return {s: math.log(1 + (n + 1) / (sum(1 for d in documents if s in d) + 1)) for s in asked}


def _reason(covered: int, asked: int, title: float, phrase: float) -> str:
    return (f"heuristic: covers {covered}/{asked} question terms"
            f"{', title matches' if title > 0 else ''}"
            f"{', exact phrase found' if phrase > 0 else ''}.")


def heuristic_scores(question: str,
                     candidates: Sequence[Candidate]) -> list[tuple[float, str]]:
    """Per candidate, a score in [0, 1] and a one-sentence reason that says what matched.

    Scores are relative to the pool graded together: terms weigh by their rarity among the
    candidates' documents, and the retrieval score counts as a share of the best one (fused
    scores of different questions are not on one scale).
    """
    asked = list(dict.fromkeys(terms(question)))
    if not asked:
        return [(0.0, "heuristic: the question has no searchable terms.")] * len(candidates)
    stems = list(dict.fromkeys(map(_stem, asked)))
    texts = [_Text.of(c) for c in candidates]
    documents: dict[str, set[str]] = {}
    for candidate, text in zip(candidates, texts, strict=True):
        documents.setdefault(candidate.chunk.doc_id, set()).update(text.stems)
    weight = term_weights(stems, [frozenset(d) for d in documents.values()])
    total = sum(weight.values())
    best = max((c.retrieval_score for c in candidates), default=0.0)
    pairs = _phrases(asked)
    scored = []
    for candidate, text in zip(candidates, texts, strict=True):
        coverage = sum(weight[s] for s in stems if s in text.stems) / total
        title = sum(weight[s] for s in stems if s in text.title) / total
        phrase = sum(1 for p in pairs if p in text.joined) / len(pairs) if pairs else coverage
        retrieval = min(1.0, max(0.0, candidate.retrieval_score / best)) if best > 0 else 0.0
        score = (W_COVERAGE * coverage + W_RETRIEVAL * retrieval + W_PHRASE * phrase
                 + W_TITLE * title)
        covered = sum(1 for s in stems if s in text.stems)
        scored.append((round(min(1.0, score), 4), _reason(covered, len(stems), title, phrase)))
    return scored


class HeuristicGrader:
    """For `fast` mode and for running without an LLM; its grades say they are heuristic."""

    async def grade(self, question: str, candidates: Sequence[Candidate],
                    board: Scoreboard | None = None) -> GradingResult:
        # All at once, without a call: nothing for the board to tell early.
        result = GradingResult()
        for candidate, (score, reason) in zip(candidates, heuristic_scores(question, candidates),
                                              strict=True):
            result.grades[candidate.chunk.chunk_id] = Grade(score, reason, GradeSource.HEURISTIC)
        return result
