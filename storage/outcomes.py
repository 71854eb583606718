"""Help-channel questions and their outcomes: asked (answered or held out), a person's first
reply, "Still need help?", resolved by Sift or by a person."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, insert, select, update
from sqlalchemy.exc import IntegrityError

from storage.columns import utc_now
from storage.db import Database
from storage.models import HelpQuestion, table

SIFT, HOLDOUT = "sift", "holdout"  # arms
BY_SIFT, BY_PERSON = "sift", "person"  # resolved_by
_help = table(HelpQuestion)


@dataclass(frozen=True)
class AskedRow:
    """One help question as the deflection figures read it."""

    arm: str
    asked_at: datetime
    answered_at: datetime | None
    sift_status: str
    first_reply_at: datetime | None
    help_requested: bool
    resolved_by: str
    resolved_at: datetime | None
    channel: str = ""


def _where(platform: str, channel: str, thread: str) -> ColumnElement[bool]:
    return and_(_help.c.platform == platform, _help.c.channel == channel,
                _help.c.thread == thread)


class HelpOutcomes:
    """Blocking calls; each event names the question by its thread (platform, channel, ts)."""

    def __init__(self, db: Database, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def asked(self, platform: str, channel: str, thread: str, asker: str, arm: str,
              at: datetime | None = None) -> bool:
        """False when the question is on record already (a redelivered event)."""
        try:
            with self._db.write() as session:
                session.execute(insert(_help), [{
                    "asked_at": at or self._clock(), "platform": platform, "channel": channel,
                    "thread": thread, "asker": asker, "arm": arm, "sift_status": "",
                    "help_requested": False, "resolved_by": ""}])
        except IntegrityError:
            return False
        return True

    def answered(self, platform: str, channel: str, thread: str, interaction_id: int | None,
                 status: str, at: datetime | None = None) -> None:
        self._set(platform, channel, thread, interaction_id=interaction_id,
                  sift_status=status, answered_at=at or self._clock())

    def replied(self, platform: str, channel: str, thread: str, user: str,
                at: datetime | None = None) -> None:
        """A person other than the asker replied: kept only the first time."""
        with self._db.write() as session:
            session.execute(update(_help).where(
                _where(platform, channel, thread), _help.c.asker != user,
                _help.c.first_reply_at.is_(None)).values(first_reply_at=at or self._clock()))

    def help_requested(self, platform: str, channel: str, thread: str) -> None:
        self._set(platform, channel, thread, help_requested=True)

    def resolved(self, platform: str, channel: str, thread: str, by: str, user: str,
                 at: datetime | None = None) -> bool:
        """The asker's own ✅ or 👍 resolves their question (the first one counts)."""
        with self._db.write() as session:
            result: object = session.execute(update(_help).where(
                _where(platform, channel, thread), _help.c.asker == user,
                _help.c.resolved_by == "").values(resolved_by=by,
                                                  resolved_at=at or self._clock()))
        return bool(getattr(result, "rowcount", 0))

    def thread_of(self, interaction_id: int) -> tuple[str, str, str] | None:
        """The help question an answer belongs to: (platform, channel, thread)."""
        with self._db.read() as session:
            row = session.execute(select(_help.c.platform, _help.c.channel, _help.c.thread)
                                  .where(_help.c.interaction_id == interaction_id)).first()
        return None if row is None else (row.platform, row.channel, row.thread)

    def since(self, when: datetime) -> list[AskedRow]:
        query = select(_help).where(_help.c.asked_at >= when).order_by(_help.c.id)
        with self._db.read() as session:
            return [AskedRow(r.arm, r.asked_at, r.answered_at, r.sift_status,
                             r.first_reply_at, r.help_requested, r.resolved_by,
                             r.resolved_at, r.channel) for r in session.execute(query)]

    def _set(self, platform: str, channel: str, thread: str, **values: object) -> None:
        with self._db.write() as session:
            session.execute(update(_help).where(_where(platform, channel, thread))
                            .values(**values))
