"""The admin console's overview, read from the per-day rollups (a few hundred rows a window)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from sqlalchemy import func, select

from storage.db import Database
from storage.models import DailyLatency, DailyOutcome, DailyTokens
from storage.rollup import histogram_percentile
from storage.stats import STAGES, FeedbackSummary, ModeStats, StageLatency, StatusCounts

# In StatusCounts' order; the charts colour them in this order too.
STATUSES = ("answered", "no_answer", "degraded", "error", "not_indexed")


@dataclass
class Day:
    day: date
    statuses: dict[str, int] = field(default_factory=dict)
    up: int = 0
    down: int = 0
    # (model, input tokens, output tokens) per model used that day
    tokens: list[tuple[str, int, int]] = field(default_factory=list)
    # (platform, channel, status) -> questions that day
    places: dict[tuple[str, str, str], int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.statuses.values())


@dataclass(frozen=True)
class GroupCount:
    name: str
    total: int
    answered: int
    no_answer: int


@dataclass(frozen=True)
class Overview:
    days: list[Day]  # every day from `since` to today, empty ones included
    statuses: StatusCounts
    feedback: FeedbackSummary
    latencies: list[StageLatency]
    modes: list[ModeStats]
    ab: bool  # an A/B split routed questions in the window


def daily(db: Database, since: date, today: date) -> list[Day]:
    """Outcomes, votes and tokens per UTC day from `since` to `today` inclusive."""
    o, t = DailyOutcome, DailyTokens
    days = {since.fromordinal(n): Day(since.fromordinal(n))
            for n in range(since.toordinal(), today.toordinal() + 1)}
    outcomes = (select(o.day, o.platform, o.channel, o.status, func.sum(o.questions),
                       func.sum(o.up), func.sum(o.down))
                .where(o.day >= since).group_by(o.day, o.platform, o.channel, o.status))
    tokens = select(t.day, t.model, t.input_tokens, t.output_tokens).where(t.day >= since)
    with db.read() as session:
        for day, platform, channel, status, questions, up, down in session.execute(outcomes):
            entry = days.get(day)
            if entry is None:  # a day after `today` (a clock ahead): not in this window
                continue
            entry.statuses[status] = entry.statuses.get(status, 0) + int(questions)
            entry.places[(platform or "-", channel or "-", status)] = int(questions)
            entry.up += int(up or 0)
            entry.down += int(down or 0)
        for day, model, used_in, used_out in session.execute(tokens):
            if day in days:
                days[day].tokens.append((model, int(used_in), int(used_out)))
    return list(days.values())


def _histograms(db: Database, since: date) -> tuple[dict[str, dict[int, int]],
                                                     dict[tuple[str, str], dict[int, int]]]:
    """Latency buckets per stage, and the total's per (mode, arm)."""
    h = DailyLatency
    count = func.sum(h.questions)
    per_stage = (select(h.stage, h.bucket, count).where(h.day >= since)
                 .group_by(h.stage, h.bucket))
    per_mode = (select(h.mode, h.ab_arm, h.bucket, count)
                .where(h.day >= since, h.stage == "total").group_by(h.mode, h.ab_arm, h.bucket))
    stages: dict[str, dict[int, int]] = {}
    modes: dict[tuple[str, str], dict[int, int]] = {}
    with db.read() as session:
        for stage, bucket, n in session.execute(per_stage):
            stages.setdefault(stage, {})[bucket] = int(n)
        for mode, arm, bucket, n in session.execute(per_mode):
            modes.setdefault((mode, arm), {})[bucket] = int(n)
    return stages, modes


def _latencies(stages: dict[str, dict[int, int]]) -> list[StageLatency]:
    order = [s for s in STAGES if s in stages] + sorted(set(stages) - set(STAGES))
    return [StageLatency(s, sum(stages[s].values()),
                         histogram_percentile(stages[s], 0.5) or 0.0,
                         histogram_percentile(stages[s], 0.95) or 0.0) for s in order]


def _modes(db: Database, since: date,
           totals: dict[tuple[str, str], dict[int, int]]) -> tuple[list[ModeStats], bool]:
    """The A/B comparison: while a split routed questions, only those count, per arm;
    without one, the modes as they were used (as storage.stats.mode_stats does)."""
    o = DailyOutcome
    query = (select(o.mode, o.ab_arm, o.status, func.sum(o.questions), func.sum(o.up),
                    func.sum(o.down)).where(o.day >= since).group_by(o.mode, o.ab_arm, o.status))
    with db.read() as session:
        rows = [(m, a or "", s, int(n), int(u or 0), int(d or 0))
                for m, a, s, n, u, d in session.execute(query)]
    armed = any(arm for _, arm, *_ in rows)
    groups: dict[str, list[int]] = {}
    latency: dict[str, dict[int, int]] = {}
    for mode, arm, status, n, up, down in rows:
        if armed and not arm:
            continue
        entry = groups.setdefault(arm if armed else mode, [0, 0, 0, 0])
        for i, value in enumerate((n, up, down, n if status == "no_answer" else 0)):
            entry[i] += value
    for (mode, arm), buckets in totals.items():
        if armed and not arm:
            continue
        merged = latency.setdefault(arm if armed else mode, {})
        for bucket, n in buckets.items():
            merged[bucket] = merged.get(bucket, 0) + n
    modes = [ModeStats(name, n, up, down, no_answer,
                       histogram_percentile(latency.get(name, {}), 0.5))
             for name, (n, up, down, no_answer) in sorted(groups.items())]
    return modes, armed or len(modes) > 1


def overview(db: Database, since: date, today: date) -> Overview:
    """Everything the overview page shows for the days `since`..`today`."""
    days = daily(db, since, today)
    stages, totals = _histograms(db, since)
    modes, ab = _modes(db, since, totals)
    counts = {s: sum(d.statuses.get(s, 0) for d in days) for s in STATUSES}
    total = sum(d.total for d in days)
    voted = _voted(db, since)
    feedback = FeedbackSummary(sum(d.up for d in days), sum(d.down for d in days), voted, total)
    return Overview(days, StatusCounts(total, *counts.values()), feedback,
                    _latencies(stages), modes, ab)


def _voted(db: Database, since: date) -> int:
    with db.read() as session:
        found = session.scalar(select(func.sum(DailyOutcome.voted))
                               .where(DailyOutcome.day >= since))
    return int(found or 0)


def groups(days: list[Day], by_channel: bool, limit: int) -> list[GroupCount]:
    """Questions per platform (or channel) over these days, most first."""
    found: dict[str, list[int]] = {}
    for day in days:
        for (platform, channel, status), count in day.places.items():
            entry = found.setdefault(channel if by_channel else platform, [0, 0, 0])
            entry[0] += count
            entry[1] += count if status == "answered" else 0
            entry[2] += count if status == "no_answer" else 0
    ranked = sorted(found.items(), key=lambda item: (-item[1][0], item[0]))[:limit]
    return [GroupCount(name, *counts) for name, counts in ranked]
