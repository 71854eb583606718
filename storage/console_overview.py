"""The admin console's overview: per-day counts, votes and tokens, by platform and channel."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import ColumnElement, Date, case, cast, func, select
from sqlalchemy.orm import Session

from storage.db import Database
from storage.models import Feedback, Interaction
from storage.stats import InteractionRow

LLM_STAGES = ("understand", "grade", "generate")
STATUSES = ("answered", "no_answer", "degraded", "error")
SAMPLE = 2000  # latency percentiles and the A/B comparison use the window's newest questions


@dataclass
class Day:
    day: date
    statuses: dict[str, int] = field(default_factory=dict)
    up: int = 0
    down: int = 0
    # (model, input tokens, output tokens) per LLM stage and model used that day
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


def day_of(column: Any, dialect: str) -> ColumnElement[Any]:
    """The UTC calendar day of a timestamp column, whatever the server's time zone."""
    if dialect == "postgresql":
        return cast(func.timezone("UTC", column), Date)
    return func.date(column)


def _as_date(value: Any) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def daily(db: Database, since: datetime, until: datetime | None = None) -> dict[date, Day]:
    """Outcomes, votes and tokens per UTC day of the questions asked in [since, until)."""
    day = day_of(Interaction.created_at, db.dialect)
    window = [Interaction.created_at >= since]
    if until is not None:
        window.append(Interaction.created_at < until)
    days: dict[date, Day] = {}

    def entry(raw: Any) -> Day:
        return days.setdefault(_as_date(raw), Day(_as_date(raw)))

    with db.read() as session:
        query = (select(day, Interaction.status, func.count()).where(*window)
                 .group_by(day, Interaction.status))
        for raw, status, count in session.execute(query):
            entry(raw).statuses[status] = int(count)
        query = (select(day, Interaction.platform, Interaction.channel, Interaction.status,
                        func.count()).where(*window)
                 .group_by(day, Interaction.platform, Interaction.channel, Interaction.status))
        for raw, platform, channel, status, count in session.execute(query):
            entry(raw).places[(platform or "-", channel or "-", status)] = int(count)
        votes = (select(day, func.sum(case((Feedback.vote == 1, 1), else_=0)),
                        func.sum(case((Feedback.vote == -1, 1), else_=0)))
                 .join(Interaction, Interaction.id == Feedback.interaction_id)
                 .where(*window).group_by(day))
        for raw, up, down in session.execute(votes):
            entry(raw).up, entry(raw).down = int(up or 0), int(down or 0)
        for raw, tokens in _tokens(session, day, window):
            entry(raw).tokens.extend(tokens)
    return days


def _tokens(session: Session, day: ColumnElement[Any],
            window: list[Any]) -> list[tuple[Any, list[tuple[str, int, int]]]]:
    """One pass over the window: per day and model of each LLM stage, the tokens used."""
    models = [Interaction.models[s].as_string() for s in LLM_STAGES]
    sums = [func.sum(Interaction.usage[(s, kind)].as_float()) for s in LLM_STAGES
            for kind in ("input_tokens", "output_tokens")]
    query = select(day, *models, *sums).where(*window).group_by(day, *models)
    found = []
    for row in session.execute(query):
        raw, names, used = row[0], row[1:1 + len(models)], row[1 + len(models):]
        found.append((raw, [(str(name), int(used[2 * i] or 0), int(used[2 * i + 1] or 0))
                            for i, name in enumerate(names)
                            if name is not None and (used[2 * i] or used[2 * i + 1])]))
    return found


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


def _sample(session: Session, since: datetime) -> list[InteractionRow]:
    # Newest by the indexed timestamp: the index gives the top rows without a sort.
    query = (select(Interaction.id, Interaction.status, Interaction.mode,
                    Interaction.timings_ms, Interaction.created_at, Interaction.ab_arm)
             .where(Interaction.created_at >= since)
             .order_by(Interaction.created_at.desc()).limit(SAMPLE))
    rows = list(session.execute(query))
    votes: dict[int, list[int]] = {}
    if rows:
        tally = (select(Feedback.interaction_id, Feedback.vote, func.count())
                 .where(Feedback.interaction_id.in_([r.id for r in rows]))
                 .group_by(Feedback.interaction_id, Feedback.vote))
        for interaction_id, vote, count in session.execute(tally):
            votes.setdefault(interaction_id, [0, 0])[0 if vote == 1 else 1] += int(count)
    return [InteractionRow(r.id, "", r.status, r.mode, r.timings_ms or {},
                           r.created_at, up=votes.get(r.id, [0, 0])[0],
                           down=votes.get(r.id, [0, 0])[1], ab_arm=r.ab_arm or "")
            for r in rows]


def sample(db: Database, since: datetime) -> list[InteractionRow]:
    """The window's newest SAMPLE questions with their votes (question text left out)."""
    with db.read() as session:
        return _sample(session, since)
