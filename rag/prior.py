"""The learned document prior: a bounded multiplier on retrieval scores from its history."""

from __future__ import annotations

import asyncio
import enum
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from rag.types import Candidate, Grade, GradeSource

log = logging.getLogger(__name__)

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class PriorConfig:
    """How much history moves a document, and how fast old history fades."""

    low: float = 0.7  # the multiplier never falls below this ...
    high: float = 1.4  # ... nor rises above this
    half_life_days: float = 90.0  # evidence this old counts half
    # Smoothing: the rate is shrunk towards the base rate as if the document had been
    # retrieved this many more times at the base rate, and the vote balance as if this many
    # more people had voted neither way. Little evidence therefore leaves the prior near 1.
    grade_strength: float = 20.0
    vote_strength: float = 5.0
    grade_weight: float = 0.5  # log-multiplier per unit of log(rate / base rate)
    # Log-multiplier when every voter agrees: votes alone move a document by at most x1.22.
    # In fast mode the heuristic grade also follows the (scaled) retrieval score, so the prior
    # acts twice; at 0.35 votes from people who all lie (simulated on aws-docs) cost ~1 point
    # of nDCG@10, at 0.2 none, and honest votes still gain (see bench/README.md, `sift eval`).
    vote_weight: float = 0.2
    base_rate: float = 0.3  # graded-relevant share assumed when nothing is known yet


# Grades that count as evidence of a document's relevance: a model's, fresh or cached. The
# heuristic grade is computed from the retrieval score, which this prior scales: counting it
# would let a document's multiplier raise its own grade, and so its multiplier (a general page
# that ranks well for many questions would feed itself and crowd out the specific one).
EVIDENCE_SOURCES = frozenset({GradeSource.LLM, GradeSource.CACHE})


def is_evidence(grade: Grade | None) -> bool:
    return grade is not None and grade.score is not None and grade.source in EVIDENCE_SOURCES


class OverrideKind(enum.StrEnum):
    """Admin decisions, which take precedence over what the history says."""

    PIN = "pin"  # first among the candidates whenever it is retrieved, and always selected
    BOOST = "boost"  # a fixed multiplier above 1
    DEMOTE = "demote"  # a fixed multiplier below 1
    HIDE = "hide"  # never retrieved (filtered inside the index query)


@dataclass(frozen=True)
class GradeTally:
    """Graded retrievals of the document at about one time: how many, how many of them were
    relevant, and when. Storage sums a day's into one (see HistoryOfDocuments), so that a
    popular document's history is one row a day rather than one per retrieval."""

    graded: int
    relevant: int
    at: datetime

    @classmethod
    def one(cls, relevant: bool, at: datetime) -> GradeTally:
        return cls(1, int(relevant), at)


@dataclass(frozen=True)
class VoteEvent:
    """One person's current vote (+1 or -1) on one answer that cited the document."""

    user: str
    vote: int
    at: datetime


@dataclass(frozen=True)
class Evidence:
    """Decayed sums: graded retrievals, relevant ones, and the weight of voters each way."""

    graded: float = 0.0
    relevant: float = 0.0
    up: float = 0.0
    down: float = 0.0


@dataclass(frozen=True)
class Adjustment:
    """What the pipeline applies to one document's candidates."""

    multiplier: float = 1.0
    pinned: bool = False


def decay(at: datetime, now: datetime, half_life_days: float) -> float:
    """Weight of evidence from `at`: 1 now, 1/2 one half-life ago; future times count 1."""
    age_days = max(0.0, (now - at).total_seconds() / SECONDS_PER_DAY)
    return 0.5 ** (age_days / half_life_days) if half_life_days > 0 else 1.0


def grade_evidence(tallies: Iterable[GradeTally], now: datetime,
                   half_life_days: float) -> tuple[float, float]:
    """(graded, relevant), each retrieval weighted by its age."""
    graded = relevant = 0.0
    for tally in tallies:
        weight = decay(tally.at, now, half_life_days)
        graded += weight * tally.graded
        relevant += weight * tally.relevant
    return graded, relevant


def voter_evidence(votes: Iterable[VoteEvent], now: datetime,
                   half_life_days: float) -> tuple[float, float]:
    """(up, down) weight of the *people* who voted: each person counts at most once.

    A person's stance is the age-weighted mean of their votes on answers citing the document,
    and their weight is that of their most recent vote: forty 👎 from one account weigh what
    one 👎 weighs, and someone who voted both ways cancels out.
    """
    per_person: dict[str, list[tuple[float, int]]] = {}
    for v in votes:
        if v.vote in (1, -1):
            per_person.setdefault(v.user, []).append((decay(v.at, now, half_life_days), v.vote))
    up = down = 0.0
    for cast in per_person.values():
        total = sum(w for w, _ in cast)
        if total <= 0:
            continue
        stance = sum(w * vote for w, vote in cast) / total
        weight = max(w for w, _ in cast)
        up += weight * max(0.0, stance)
        down += weight * max(0.0, -stance)
    return up, down


def evidence(grades: Iterable[GradeTally], votes: Iterable[VoteEvent], now: datetime,
             config: PriorConfig) -> Evidence:
    graded, relevant = grade_evidence(grades, now, config.half_life_days)
    up, down = voter_evidence(votes, now, config.half_life_days)
    return Evidence(graded, relevant, up, down)


def multiplier(found: Evidence, config: PriorConfig, base_rate: float | None = None) -> float:
    """The bounded multiplier: smoothed relevant rate against the base rate, and the smoothed
    balance of voters, combined in log space and clamped to [low, high]."""
    p0 = min(0.95, max(0.05, config.base_rate if base_rate is None else base_rate))
    rate = (found.relevant + config.grade_strength * p0) / (found.graded + config.grade_strength)
    balance = (found.up - found.down) / (found.up + found.down + config.vote_strength)
    log_factor = config.grade_weight * math.log(rate / p0) + config.vote_weight * balance
    return min(config.high, max(config.low, math.exp(log_factor)))


def override_adjustment(kind: OverrideKind, factor: float | None,
                        config: PriorConfig) -> Adjustment | None:
    """An admin override's adjustment; None for `hide` (the index never returns the document)."""
    if kind is OverrideKind.HIDE:
        return None
    if kind is OverrideKind.PIN:
        return Adjustment(1.0, pinned=True)
    default = config.high if kind is OverrideKind.BOOST else config.low
    return Adjustment(default if factor is None else factor)


def rerank(candidates: Sequence[Candidate],
           adjustments: Mapping[str, Adjustment]) -> list[Candidate]:
    """Scale each candidate's retrieval score by its document's multiplier, pinned documents
    first, and renumber the ranks. Without adjustments the order is unchanged."""
    if not adjustments:
        return list(candidates)
    none = Adjustment()

    def key(c: Candidate) -> tuple[int, float, int]:
        adjustment = adjustments.get(c.chunk.doc_id, none)
        return (0 if adjustment.pinned else 1,
                -c.retrieval_score * adjustment.multiplier, c.rank)

    ordered = sorted(candidates, key=key)
    result = []
    for i, c in enumerate(ordered, start=1):
        adjustment = adjustments.get(c.chunk.doc_id, none)
        result.append(replace(c, rank=i, pinned=adjustment.pinned, retrieval_score=round(
            c.retrieval_score * adjustment.multiplier, 6)))
    return result


class DocumentPriors(Protocol):
    """Where the overrides and the learned multipliers come from (blocking: storage)."""

    def hidden(self) -> Sequence[str]: ...

    def adjustments(self, doc_ids: Sequence[str]) -> Mapping[str, Adjustment]: ...


async def hidden_documents(priors: DocumentPriors | None) -> tuple[str, ...]:
    """The hidden documents, to exclude inside the index query. If storage fails the question
    is still answered (hiding curates, it does not grant access); the log says so."""
    if priors is None:
        return ()
    try:
        return tuple(await asyncio.to_thread(priors.hidden))
    except Exception:
        log.exception("could not read the hidden documents; searching without that filter")
        return ()


async def adjusted(priors: DocumentPriors | None,
                   candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates reranked by their documents' priors (unchanged when storage fails)."""
    if priors is None or not candidates:
        return list(candidates)
    doc_ids = sorted({c.chunk.doc_id for c in candidates})
    try:
        found = await asyncio.to_thread(priors.adjustments, doc_ids)
    except Exception:
        log.exception("could not read the document priors; ranking without them")
        return list(candidates)
    return rerank(candidates, found)
