"""Per-day rollups of interactions (outcomes, votes, tokens, latency histograms), kept current."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.orm import Session

from storage.models import DailyLatency, DailyOutcome, DailyTokens, Feedback, Interaction, table
from storage.upsert import upsert

RATIO = 1.05  # histogram buckets 5% wide: percentiles read from them are within 5%
TOP_BUCKET = 400  # 1.05**400 ms is years: anything longer shares the last bucket
_OUTCOME_KEYS = ("day", "platform", "channel", "status", "mode", "ab_arm")
_LATENCY_KEYS = ("day", "stage", "mode", "ab_arm", "bucket")


def bucket_of(ms: float) -> int:
    return min(TOP_BUCKET, int(math.log(max(0.0, ms) + 1.0, RATIO)))


def bucket_bounds(bucket: int) -> tuple[float, float]:
    return RATIO ** bucket - 1.0, RATIO ** (bucket + 1) - 1.0


def histogram_percentile(counts: Mapping[int, int], q: float) -> float | None:
    """The q-th quantile of the values counted in `counts` (bucket -> count), interpolated
    inside its bucket as if the bucket's values were spread evenly; None when empty."""
    total = sum(counts.values())
    if not total:
        return None
    rank = (total - 1) * q  # the same rank as storage.stats.percentile over the raw values
    seen = 0
    for bucket in sorted(counts):
        count = counts[bucket]
        if rank < seen + count:
            low, high = bucket_bounds(bucket)
            return low + (high - low) * (rank - seen + 0.5) / count
        seen += count
    return bucket_bounds(max(counts))[1]


def utc_day(moment: datetime) -> date:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC).date()


@dataclass(frozen=True)
class Asked:
    """What the rollups need of one interaction."""

    created_at: datetime
    platform: str
    channel: str
    status: str
    mode: str
    ab_arm: str
    timings_ms: Mapping[str, Any]
    usage: Mapping[str, Any]
    models: Mapping[str, Any]

    def key(self) -> dict[str, Any]:
        return {"day": utc_day(self.created_at), "platform": self.platform or "",
                "channel": self.channel or "", "status": self.status, "mode": self.mode,
                "ab_arm": self.ab_arm or ""}


def _tokens(asked: Asked) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for stage, used in asked.usage.items():
        model = asked.models.get(stage)
        if not model or not isinstance(used, Mapping):
            continue
        entry = found.setdefault(str(model), [0, 0])
        entry[0] += int(used.get("input_tokens") or 0)
        entry[1] += int(used.get("output_tokens") or 0)
    return found


def _latencies(asked: Asked) -> list[tuple[str, int]]:
    return sorted((str(stage), bucket_of(float(ms))) for stage, ms in asked.timings_ms.items()
                  if isinstance(ms, int | float))


class Rollup:
    """Counts accumulated in memory, written as upserts that add (one statement per table)."""

    def __init__(self) -> None:
        self.outcomes: dict[tuple[Any, ...], list[int]] = {}
        self.tokens: dict[tuple[date, str], list[int]] = {}
        self.latency: dict[tuple[Any, ...], int] = {}

    def add(self, asked: Asked, up: int = 0, down: int = 0) -> None:
        key = asked.key()
        entry = self.outcomes.setdefault(tuple(key.values()), [0, 0, 0, 0])
        entry[0] += 1
        entry[1] += up
        entry[2] += down
        entry[3] += int(bool(up or down))
        for model, (used_in, used_out) in _tokens(asked).items():
            tokens = self.tokens.setdefault((key["day"], model), [0, 0])
            tokens[0] += used_in
            tokens[1] += used_out
        for stage, bucket in _latencies(asked):
            at = (key["day"], stage, key["mode"], key["ab_arm"], bucket)
            self.latency[at] = self.latency.get(at, 0) + 1

    def write(self, dialect: str, connection: Connection | Session) -> None:
        """Add these counts to the stored ones, rows in key order (the lock order of every
        writer, so concurrent PostgreSQL transactions cannot deadlock)."""
        outcomes = [dict(zip(_OUTCOME_KEYS, k, strict=True)) |
                    dict(zip(("questions", "up", "down", "voted"), v, strict=True))
                    for k, v in sorted(self.outcomes.items())]
        tokens = [{"day": d, "model": m, "input_tokens": i, "output_tokens": o}
                  for (d, m), (i, o) in sorted(self.tokens.items())]
        latency = [dict(zip(_LATENCY_KEYS, k, strict=True)) | {"questions": n}
                   for k, n in sorted(self.latency.items())]
        for model, rows, keys, add in (
                (DailyOutcome, outcomes, _OUTCOME_KEYS, ("questions", "up", "down", "voted")),
                (DailyTokens, tokens, ("day", "model"), ("input_tokens", "output_tokens")),
                (DailyLatency, latency, _LATENCY_KEYS, ("questions",))):
            if rows:
                connection.execute(upsert(dialect, table(model), keys=keys, add=add), rows)


def record_vote(session: Session, asked: Asked, up: int, down: int, voted: int) -> None:
    """Move one interaction's vote counts on its day (its row exists: recording made it)."""
    o = DailyOutcome
    where = [getattr(o, name) == value for name, value in asked.key().items()]
    session.execute(update(o).where(*where).values(up=o.up + up, down=o.down + down,
                                                   voted=o.voted + voted))


_COLUMNS = (Interaction.id, Interaction.created_at, Interaction.platform, Interaction.channel,
            Interaction.status, Interaction.mode, Interaction.ab_arm, Interaction.timings_ms,
            Interaction.usage, Interaction.models)


def _batches(connection: Connection, size: int) -> Iterable[list[Any]]:
    last = 0
    while True:
        rows = list(connection.execute(select(*_COLUMNS).where(Interaction.id > last)
                                       .order_by(Interaction.id).limit(size)))
        if not rows:
            return
        yield rows
        last = rows[-1].id


def rebuild(connection: Connection, size: int = 5000) -> int:
    """Recount every rollup from the stored interactions and votes (the migration that added
    them, and data loaded around the repositories); returns the interactions counted."""
    for model in (DailyOutcome, DailyTokens, DailyLatency):
        connection.execute(delete(table(model)))
    rollup, counted = Rollup(), 0
    for rows in _batches(connection, size):
        tally: dict[int, list[int]] = {}
        votes = (select(Feedback.interaction_id, Feedback.vote, func.count())
                 .where(Feedback.interaction_id.in_([r.id for r in rows]))
                 .group_by(Feedback.interaction_id, Feedback.vote))
        for interaction_id, vote, count in connection.execute(votes):
            tally.setdefault(interaction_id, [0, 0])[0 if vote == 1 else 1] += int(count)
        for r in rows:
            up, down = tally.get(r.id, (0, 0))
            rollup.add(Asked(r.created_at, r.platform, r.channel, r.status, r.mode,
                             r.ab_arm or "", r.timings_ms or {}, r.usage or {},
                             r.models or {}), up, down)
        counted += len(rows)
    rollup.write(connection.dialect.name, connection)
    return counted

