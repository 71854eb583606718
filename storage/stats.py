"""Pure aggregations behind `sift report`: percentiles, per-stage latency, votes, gaps, modes."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

STAGES = ("understand", "retrieve", "grade", "select", "generate", "total")
_SPACES = re.compile(r"\s+")


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th quantile (0..1) with linear interpolation between ranks; None when empty."""
    ordered = sorted(values)
    if not ordered:
        return None
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be within [0, 1], got {q}")
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def normalise(question: str) -> str:
    """Case, spacing and trailing punctuation do not make a different question."""
    return _SPACES.sub(" ", question.casefold()).strip().rstrip("?!.").strip()


@dataclass(frozen=True)
class InteractionRow:
    """One interaction as the report sees it, with the current votes on it."""

    id: int
    question: str
    status: str
    mode: str
    timings_ms: Mapping[str, float]
    created_at: datetime
    up: int = 0
    down: int = 0
    ab_arm: str = ""  # set when the A/B split chose the mode
    channel: str = ""  # "platform:channel" where it was asked


@dataclass(frozen=True)
class StatusCounts:
    total: int
    answered: int
    no_answer: int
    degraded: int
    error: int
    not_indexed: int = 0  # no answer while a first sync ran: not a gap (rag.types.AnswerStatus)


@dataclass(frozen=True)
class StageLatency:
    stage: str
    count: int
    p50_ms: float
    p95_ms: float


@dataclass(frozen=True)
class FeedbackSummary:
    up: int
    down: int
    voted_answers: int
    answers: int

    @property
    def up_ratio(self) -> float | None:
        return share(self.up, self.up + self.down)


@dataclass(frozen=True)
class QuestionVotes:
    question: str
    down: int
    up: int
    asked: int


@dataclass(frozen=True)
class ContentGap:
    question: str
    asked: int
    last_asked: datetime


@dataclass(frozen=True)
class ModeStats:
    mode: str
    count: int
    up: int
    down: int
    no_answer: int
    p50_ms: float | None

    @property
    def thumbs_up_rate(self) -> float | None:
        return share(self.up, self.up + self.down)

    @property
    def no_answer_rate(self) -> float | None:
        return share(self.no_answer, self.count)


def status_counts(rows: Sequence[InteractionRow]) -> StatusCounts:
    def count(status: str) -> int:
        return sum(1 for r in rows if r.status == status)

    return StatusCounts(len(rows), count("answered"), count("no_answer"), count("degraded"),
                        count("error"), count("not_indexed"))


def stage_latencies(rows: Sequence[InteractionRow]) -> list[StageLatency]:
    """p50/p95 per stage over the interactions that ran it, in pipeline order."""
    samples: dict[str, list[float]] = {}
    for row in rows:
        for stage, ms in row.timings_ms.items():
            samples.setdefault(stage, []).append(float(ms))
    order = [s for s in STAGES if s in samples] + sorted(set(samples) - set(STAGES))
    return [StageLatency(s, len(samples[s]), percentile(samples[s], 0.5) or 0.0,
                         percentile(samples[s], 0.95) or 0.0) for s in order]


def feedback_summary(rows: Sequence[InteractionRow]) -> FeedbackSummary:
    return FeedbackSummary(sum(r.up for r in rows), sum(r.down for r in rows),
                           sum(1 for r in rows if r.up or r.down), len(rows))


def _by_question(rows: Iterable[InteractionRow]) -> dict[str, list[InteractionRow]]:
    groups: dict[str, list[InteractionRow]] = {}
    for row in rows:
        groups.setdefault(normalise(row.question), []).append(row)
    return groups


def most_downvoted(rows: Sequence[InteractionRow], limit: int) -> list[QuestionVotes]:
    """Questions by thumbs-down, then fewer thumbs-up; shown as last asked."""
    found = [QuestionVotes(max(g, key=lambda r: r.created_at).question,
                           sum(r.down for r in g), sum(r.up for r in g), len(g))
             for g in _by_question(rows).values()]
    found = [q for q in found if q.down]
    found.sort(key=lambda q: (-q.down, q.up, q.question))
    return found[:limit]


def content_gaps(rows: Sequence[InteractionRow], limit: int) -> list[ContentGap]:
    """Questions the bot found no answer to, most often asked first."""
    unanswered = _by_question(r for r in rows if r.status == "no_answer")
    gaps = []
    for group in unanswered.values():
        last = max(group, key=lambda r: r.created_at)
        gaps.append(ContentGap(last.question, len(group), last.created_at))
    gaps.sort(key=lambda g: (-g.asked, -g.last_asked.timestamp(), g.question))
    return gaps[:limit]


def mode_stats(rows: Sequence[InteractionRow]) -> list[ModeStats]:
    """The A/B comparison: per arm, votes, refusals and median total latency.

    While a split runs, only the questions it routed count, so a mode someone chose on
    purpose cannot tilt an arm; without one, the modes as they were used are compared.
    """
    armed = [r for r in rows if r.ab_arm]
    rows = armed or rows
    arm_of = (lambda r: r.ab_arm) if armed else (lambda r: r.mode)
    result = []
    for mode in sorted({arm_of(r) for r in rows}):
        group = [r for r in rows if arm_of(r) == mode]
        totals = [float(r.timings_ms["total"]) for r in group if "total" in r.timings_ms]
        result.append(ModeStats(mode, len(group), sum(r.up for r in group),
                                sum(r.down for r in group),
                                sum(1 for r in group if r.status == "no_answer"),
                                percentile(totals, 0.5)))
    return result


@dataclass(frozen=True)
class ChannelStats:
    channel: str  # "platform:channel"
    count: int
    answered: int
    no_answer: int
    up: int
    down: int

    @property
    def thumbs_up_rate(self) -> float | None:
        return share(self.up, self.up + self.down)


def channel_stats(rows: Sequence[InteractionRow], limit: int) -> list[ChannelStats]:
    """Figures per conversation where people asked, busiest first."""
    result = []
    for channel in {r.channel for r in rows}:
        group = [r for r in rows if r.channel == channel]
        result.append(ChannelStats(
            channel, len(group), sum(1 for r in group if r.status in ("answered", "degraded")),
            sum(1 for r in group if r.status == "no_answer"), sum(r.up for r in group),
            sum(r.down for r in group)))
    result.sort(key=lambda c: (-c.count, c.channel))
    return result[:limit]
