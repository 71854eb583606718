"""`sift eval --simulate-feedback N`: replay the questions with votes drawn from the qrels and
measure what the learned document prior does to nDCG@10, for honest and adversarial voters."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from evaluation.metrics import mean, ndcg_at_k, strict
from rag.config import SelectionConfig
from rag.prior import (
    Adjustment,
    GradeTally,
    PriorConfig,
    VoteEvent,
    evidence,
    is_evidence,
    multiplier,
    rerank,
)
from rag.select import select, selected_in_order
from rag.types import Candidate, Grade

# Grades the pool again after the prior moved retrieval scores (the heuristic grade depends on
# them; an LLM's does not, and then there is no regrading). One grade per candidate, in order.
Regrade = Callable[[str, Sequence[Candidate]], list[Grade]]

VOTERS = ("honest", "random", "inverted", "one-account")
NOW = datetime(2026, 1, 1, tzinfo=UTC)  # simulated time: one day per round


@dataclass(frozen=True)
class SimQuestion:
    relevant: Mapping[str, float]
    candidates: tuple[Candidate, ...]  # as retrieved and graded, without any prior
    text: str = ""


@dataclass(frozen=True)
class SimOptions:
    rounds: int
    noise: float = 0.1  # chance an honest vote is flipped
    voters: str = "honest"  # honest, random, inverted (everyone lies), one-account (one liar)
    people: int = 25  # distinct simulated people asking
    cite: int = 3  # documents an answer cites: the first ones the model sees
    relevant_threshold: float = 0.5
    seed: int = 17


@dataclass(frozen=True)
class SimResult:
    voters: str
    noise: float
    ndcg: list[float]  # nDCG@10 before round 1, then after each round
    votes: int

    seed: int = 17

    @property
    def gain(self) -> float:
        return self.ndcg[-1] - self.ndcg[0]


@dataclass(frozen=True)
class Replays:
    """One kind of voter replayed with several seeds: one draw moves nDCG@10 by about one
    question's worth on a small set, so the figures are the mean and the worst seed."""

    voters: str
    runs: tuple[SimResult, ...]

    @property
    def mean_gain(self) -> float:
        return mean(r.gain for r in self.runs) or 0.0

    @property
    def worst(self) -> SimResult:
        return min(self.runs, key=lambda r: r.gain)


# Random or inverted votes may cost at most this much nDCG@10, judged on the mean over seeds.
ADVERSARIAL_LIMIT = 0.01
ADVERSARIAL = ("random", "inverted")


def seeds(base: int, count: int) -> list[int]:
    """The replay seeds: the base seed, then the next ones (a run is reproducible from the base)."""
    return [base + n for n in range(max(1, count))]


def breaches(replays: Sequence[Replays], limit: float = ADVERSARIAL_LIMIT) -> list[Replays]:
    """The adversarial kinds of voter whose mean gain is below -limit."""
    return [r for r in replays if r.voters in ADVERSARIAL and r.mean_gain < -limit - 1e-12]


@dataclass
class _History:
    grades: dict[str, list[GradeTally]] = field(default_factory=dict)
    votes: dict[str, list[VoteEvent]] = field(default_factory=dict)

    def adjustments(self, config: PriorConfig, now: datetime) -> dict[str, Adjustment]:
        docs = set(self.grades) | set(self.votes)
        graded = sum(len(v) for v in self.grades.values())
        relevant = sum(e.relevant for v in self.grades.values() for e in v)
        base = relevant / graded if graded else None
        return {d: Adjustment(multiplier(evidence(self.grades.get(d, []),
                                                  self.votes.get(d, []), now, config),
                                         config, base)) for d in docs}


def _graded(question: SimQuestion, adjust: Mapping[str, Adjustment],
            regrade: Regrade | None) -> list[Candidate]:
    candidates = rerank(question.candidates, adjust)
    if regrade is None:
        return candidates
    return [replace(c, grade=g)
            for c, g in zip(candidates, regrade(question.text, candidates), strict=True)]


def _shown(candidates: Sequence[Candidate], selection: SelectionConfig) -> list[str]:
    chosen = selected_in_order(select(candidates, selection))
    return [d[0] for d in strict(c.chunk.doc_id for c in chosen)]


def _votes(options: SimOptions, good: bool, rng: random.Random,
           person: str) -> list[tuple[str, int]]:
    """Who votes what on one answer (`good`: it cited a relevant document)."""
    lie = -1 if good else 1
    if options.voters == "random":
        return [(person, rng.choice((1, -1)))]
    if options.voters == "inverted":
        return [(person, lie)]
    honest = (person, -lie if rng.random() >= options.noise else lie)
    if options.voters == "one-account":  # everyone honest, plus one account lying on everything
        return [honest, ("mallory", lie)]
    return [honest]


def _record(history: _History, question: SimQuestion, candidates: Sequence[Candidate],
            shown: Sequence[str], options: SimOptions, rng: random.Random,
            at: datetime) -> int:
    best: dict[str, float] = {}
    for c in candidates:
        if c.grade is not None and c.grade.score is not None and is_evidence(c.grade):
            best[c.chunk.doc_id] = max(best.get(c.chunk.doc_id, 0.0), c.grade.score)
    for doc, score in best.items():
        history.grades.setdefault(doc, []).append(
            GradeTally.one(score >= options.relevant_threshold, at))
    cited = shown[:options.cite]
    if not cited:
        return 0
    good = any(d in question.relevant for d in cited)
    person = f"user{rng.randrange(options.people)}"
    votes = _votes(options, good, rng, person)
    for user, vote in votes:
        for doc in cited:
            history.votes.setdefault(doc, []).append(VoteEvent(user, vote, at))
    return len(votes)


def _ndcg(questions: Sequence[SimQuestion], adjust: Mapping[str, Adjustment],
          selection: SelectionConfig, regrade: Regrade | None) -> float:
    return mean(ndcg_at_k([[d] for d in _shown(_graded(q, adjust, regrade), selection)],
                          q.relevant, 10) for q in questions) or 0.0


def simulate(questions: Sequence[SimQuestion], options: SimOptions,
             selection: SelectionConfig, prior: PriorConfig | None = None,
             regrade: Regrade | None = None) -> SimResult:
    """Replay the questions `rounds` times; each answer gets one vote (two with the liar)."""
    prior = prior or PriorConfig()
    rng, history, votes = random.Random(options.seed), _History(), 0
    curve = [_ndcg(questions, {}, selection, regrade)]
    for number in range(options.rounds):
        at = NOW + timedelta(days=number)
        adjust = history.adjustments(prior, at)
        for question in rng.sample(list(questions), len(questions)):
            candidates = _graded(question, adjust, regrade)
            votes += _record(history, question, candidates, _shown(candidates, selection),
                             options, rng, at)
        curve.append(_ndcg(questions, history.adjustments(prior, at), selection, regrade))
    return SimResult(options.voters, options.noise, curve, votes, options.seed)


def replay(questions: Sequence[SimQuestion], options: SimOptions, count: int,
           selection: SelectionConfig, prior: PriorConfig | None = None,
           regrade: Regrade | None = None) -> Replays:
    """`simulate` once per seed derived from `options.seed`."""
    return Replays(options.voters, tuple(
        simulate(questions, replace(options, seed=seed), selection, prior, regrade)
        for seed in seeds(options.seed, count)))
