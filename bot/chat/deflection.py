"""Deflection, measured against a holdout: which help questions Sift stays silent on, each
question's outcome, and resolution rates with and without Sift (Wilson intervals)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from bot.chat.message import ChatMessage, Kind
from bot.chat.policy import ChannelPolicy, Respond
from rag.types import Answer

log = logging.getLogger(__name__)
BY_SIFT, BY_PERSON, UNRESOLVED = "sift", "person", "unresolved"
SIFT, HOLDOUT = "sift", "holdout"  # arms: Sift answered, or stayed silent on purpose
ANSWERED_STATUSES = ("answered", "degraded")
QUIET = timedelta(hours=4)  # no person replied this long after Sift's answer: Sift resolved it
Z95 = 1.959964


def held_out(key: str, share: float) -> bool:
    """The same question (its platform's message id) always draws the same way, so a
    redelivered event cannot be answered after its first delivery was held out."""
    if share <= 0:
        return False
    draw = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
    return draw < share


class Asked(Protocol):
    @property
    def arm(self) -> str: ...

    @property
    def asked_at(self) -> datetime: ...

    @property
    def answered_at(self) -> datetime | None: ...

    @property
    def sift_status(self) -> str: ...

    @property
    def first_reply_at(self) -> datetime | None: ...

    @property
    def help_requested(self) -> bool: ...

    @property
    def resolved_by(self) -> str: ...

    @property
    def resolved_at(self) -> datetime | None: ...


def outcome(q: Asked, now: datetime, quiet: timedelta = QUIET) -> str:
    """The asker's ✅ or 👍 decides; else Sift's answer left alone for `quiet` (no person
    replied, nobody asked for help) resolved it; else a person's reply did; else nothing."""
    if q.resolved_by in (BY_SIFT, BY_PERSON):
        return q.resolved_by
    answered = q.answered_at if q.sift_status in ANSWERED_STATUSES else None
    if answered is not None and not q.help_requested and now - answered >= quiet and (
            q.first_reply_at is None or q.first_reply_at - answered >= quiet):
        return BY_SIFT
    return BY_PERSON if q.first_reply_at is not None else UNRESOLVED


def first_useful(q: Asked, result: str) -> float | None:
    """Seconds from the question to the reply that resolved it (None: unresolved)."""
    if result == BY_SIFT and q.answered_at is not None:
        return (q.answered_at - q.asked_at).total_seconds()
    when = q.first_reply_at or q.resolved_at
    return (when - q.asked_at).total_seconds() if result == BY_PERSON and when else None


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (sound for small n and rates near 0 or 1)."""
    if n == 0:
        return 0.0, 0.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class ArmFigures:
    arm: str  # sift, holdout
    questions: int
    by_sift: int
    by_person: int
    unresolved: int
    resolution_rate: float
    ci_low: float
    ci_high: float
    median_first_useful_s: float | None


def figures(arm: str, rows: Sequence[Asked], now: datetime,
            quiet: timedelta = QUIET) -> ArmFigures:
    results = [outcome(q, now, quiet) for q in rows]
    resolved = sum(r != UNRESOLVED for r in results)
    low, high = wilson(resolved, len(rows))
    times = [t for q, r in zip(rows, results, strict=True)
             if (t := first_useful(q, r)) is not None]
    return ArmFigures(arm, len(rows), results.count(BY_SIFT), results.count(BY_PERSON),
                      results.count(UNRESOLVED), resolved / len(rows) if rows else 0.0,
                      low, high, statistics.median(times) if times else None)


def by_arm(rows: Iterable[Asked], now: datetime, quiet: timedelta = QUIET
           ) -> list[ArmFigures]:
    """With Sift, then without (the holdout)."""
    listed = list(rows)
    return [figures(arm, [q for q in listed if q.arm == arm], now, quiet)
            for arm in (SIFT, HOLDOUT)]


class OutcomeStore(Protocol):
    """Blocking calls (storage.outcomes.HelpOutcomes)."""

    def asked(self, platform: str, channel: str, thread: str, asker: str, arm: str,
              at: datetime | None = None) -> bool: ...

    def answered(self, platform: str, channel: str, thread: str, interaction_id: int | None,
                 status: str, at: datetime | None = None) -> None: ...

    def replied(self, platform: str, channel: str, thread: str, user: str,
                at: datetime | None = None) -> None: ...

    def help_requested(self, platform: str, channel: str, thread: str) -> None: ...

    def resolved(self, platform: str, channel: str, thread: str, by: str, user: str,
                 at: datetime | None = None) -> bool: ...

    def thread_of(self, interaction_id: int) -> tuple[str, str, str] | None: ...


class Outcomes:
    """What the chat flow tells the store about help questions. A failure here is logged,
    never the asker's problem: an answer matters more than its measurement."""

    def __init__(self, store: OutcomeStore | None) -> None:
        self._store = store

    async def _run(self, what: str, call: Callable[..., object], *args: object) -> object:
        try:
            return await asyncio.to_thread(call, *args)
        except Exception:
            log.exception("deflection: could not record %s", what)
            return None

    async def hold_out(self, msg: ChatMessage, policy: ChannelPolicy) -> bool:
        """A help channel's question: recorded in its arm; True when Sift stays silent."""
        if self._store is None or msg.kind is not Kind.CHANNEL or \
                policy.respond is not Respond.QUESTIONS:
            return False
        held = held_out(f"{msg.platform}:{msg.channel}:{msg.ts}", policy.holdout)
        await self._run("a help question", self._store.asked, msg.platform, msg.channel,
                        msg.ts, msg.user, HOLDOUT if held else SIFT)
        if held:
            log.info("help question %s held out (holdout %.0f%%): Sift stays silent",
                     msg.event_key, policy.holdout * 100)
        return held

    async def answered(self, msg: ChatMessage, answer: Answer) -> None:
        if self._store is not None and msg.kind is Kind.CHANNEL:
            await self._run("an answer", self._store.answered, msg.platform, msg.channel,
                            msg.ts, answer.interaction_id, answer.status.value)

    async def replied(self, msg: ChatMessage) -> None:
        """Any thread reply: the first one by a person other than the asker is kept."""
        if self._store is not None and msg.kind is Kind.THREAD_REPLY and msg.thread:
            await self._run("a reply", self._store.replied, msg.platform, msg.channel,
                            msg.thread, msg.user)

    async def voted(self, interaction_id: int, user: str, vote: int) -> None:
        """The asker's 👍 (or ✅) on Sift's answer resolves it; a 👎 asks for help."""
        if self._store is None:
            return
        where = await self._run("a vote", self._store.thread_of, interaction_id)
        if isinstance(where, tuple):
            if vote > 0:
                await self._run("a vote", self._store.resolved, *where, SIFT, user)
            else:
                await self._run("a vote", self._store.help_requested, *where)

    async def helped(self, platform: str, channel: str, thread: str) -> None:
        if self._store is not None and thread:
            await self._run("a call for help", self._store.help_requested, platform,
                            channel, thread)

    async def by_person(self, platform: str, channel: str, thread: str, user: str) -> None:
        """The asker's ✅ on a person's reply."""
        if self._store is not None:
            await self._run("a resolution", self._store.resolved, platform, channel, thread,
                            BY_PERSON, user)


@dataclass(frozen=True)
class Deflection:
    overall: list[ArmFigures]
    weeks: list[tuple[str, str, list[ArmFigures]]]  # (ISO week, channel, figures per arm)


def deflection(rows: Sequence[Asked], now: datetime) -> Deflection:
    """Per arm overall, and per week and channel (rows carry `channel`)."""
    groups: dict[tuple[str, str], list[Asked]] = {}
    for q in rows:
        year, week, _ = q.asked_at.isocalendar()
        groups.setdefault((f"{year}-W{week:02d}", getattr(q, "channel", "")), []).append(q)
    return Deflection(by_arm(rows, now), [(w, c, by_arm(g, now))
                                          for (w, c), g in sorted(groups.items())])
