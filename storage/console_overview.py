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
SAMPLE = 5000  # latency percentiles and the A/B comparison use the window's newest questions


@dataclass
class Day:
    day: date
    statuses: dict[str, int] = field(default_factory=dict)
    up: int = 0
    down: int = 0
    # (model, input tokens, output tokens) per LLM stage and model used that day
    tokens: list[tuple[str, int, int]] = field(default_factory=list)

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
    days: list[Day]
    platforms: list[GroupCount]
    channels: list[GroupCount]
    sample: list[InteractionRow]  # newest SAMPLE interactions of the window, with votes


def day_of(column: Any, dialect: str) -> ColumnElement[Any]:
    """The UTC calendar day of a timestamp column, whatever the server's time zone."""
    if dialect == "postgresql":
        return cast(func.timezone("UTC", column), Date)
    return func.date(column)


def _as_date(value: Any) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _days(session: Session, since: datetime, dialect: str) -> dict[date, Day]:
    day = day_of(Interaction.created_at, dialect)
    days: dict[date, Day] = {}
    query = (select(day.label("day"), Interaction.status, func.count())
             .where(Interaction.created_at >= since).group_by(day, Interaction.status))
    for raw, status, count in session.execute(query):
        days.setdefault(_as_date(raw), Day(_as_date(raw))).statuses[status] = int(count)
    votes = (select(day.label("day"), func.sum(case((Feedback.vote == 1, 1), else_=0)),
                    func.sum(case((Feedback.vote == -1, 1), else_=0)))
             .join(Interaction, Interaction.id == Feedback.interaction_id)
             .where(Interaction.created_at >= since).group_by(day))
    for raw, up, down in session.execute(votes):
        entry = days.setdefault(_as_date(raw), Day(_as_date(raw)))
        entry.up, entry.down = int(up or 0), int(down or 0)
    for stage in LLM_STAGES:
        _stage_tokens(session, since, day, stage, days)
    return days


def _stage_tokens(session: Session, since: datetime, day: ColumnElement[Any], stage: str,
                  days: dict[date, Day]) -> None:
    model = Interaction.models[stage].as_string()
    tokens_in = func.sum(Interaction.usage[(stage, "input_tokens")].as_float())
    tokens_out = func.sum(Interaction.usage[(stage, "output_tokens")].as_float())
    query = (select(day, model, tokens_in, tokens_out)
             .where(Interaction.created_at >= since, model.is_not(None)).group_by(day, model))
    for raw, name, used_in, used_out in session.execute(query):
        if used_in or used_out:
            days.setdefault(_as_date(raw), Day(_as_date(raw))).tokens.append(
                (str(name), int(used_in or 0), int(used_out or 0)))


def _groups(session: Session, since: datetime, column: Any, limit: int) -> list[GroupCount]:
    total = func.count()
    query = (select(column, total, func.sum(case((Interaction.status == "answered", 1),
                                                 else_=0)),
                    func.sum(case((Interaction.status == "no_answer", 1), else_=0)))
             .where(Interaction.created_at >= since).group_by(column)
             .order_by(total.desc(), column).limit(limit))
    return [GroupCount(str(name or "-"), int(n), int(a or 0), int(na or 0))
            for name, n, a, na in session.execute(query)]


def _sample(session: Session, since: datetime) -> list[InteractionRow]:
    query = (select(Interaction.id, Interaction.question, Interaction.status, Interaction.mode,
                    Interaction.timings_ms, Interaction.created_at, Interaction.ab_arm)
             .where(Interaction.created_at >= since).order_by(Interaction.id.desc())
             .limit(SAMPLE))
    rows = list(session.execute(query))
    votes: dict[int, list[int]] = {}
    if rows:
        low = rows[-1].id  # the sample is a contiguous range of ids: one indexed range scan
        tally = (select(Feedback.interaction_id, Feedback.vote, func.count())
                 .where(Feedback.interaction_id >= low)
                 .group_by(Feedback.interaction_id, Feedback.vote))
        for interaction_id, vote, count in session.execute(tally):
            votes.setdefault(interaction_id, [0, 0])[0 if vote == 1 else 1] += int(count)
    return [InteractionRow(r.id, r.question, r.status, r.mode, r.timings_ms or {},
                           r.created_at, up=votes.get(r.id, [0, 0])[0],
                           down=votes.get(r.id, [0, 0])[1], ab_arm=r.ab_arm or "")
            for r in rows]


def overview(db: Database, since: datetime, *, channels: int = 15) -> Overview:
    with db.read() as session:
        days = _days(session, since, db.dialect)
        return Overview(days=[days[d] for d in sorted(days)],
                        platforms=_groups(session, since, Interaction.platform, 10),
                        channels=_groups(session, since, Interaction.channel, channels),
                        sample=_sample(session, since))
