"""Channel policies as stored rows: read on every message, written by the CLI and the console."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, select

from storage.columns import utc_now
from storage.db import Database
from storage.models import ChannelPolicyRow, table


@dataclass(frozen=True)
class StoredPolicy:
    platform: str
    channel: str
    label: str
    settings: Mapping[str, Any]
    updated_at: datetime


_policies = table(ChannelPolicyRow)
# Built once, values as parameters: it runs on every message.
_FIRST = select(_policies.c.platform, _policies.c.channel, _policies.c.label,
                _policies.c.settings, _policies.c.updated_at).where(
    _policies.c.platform == bindparam("platform"),
    _policies.c.channel.in_(bindparam("channels", expanding=True)))


def _stored(row: Any) -> StoredPolicy:
    """A policy from its row, an ORM object or a Core row alike."""
    return StoredPolicy(row.platform, row.channel, row.label, dict(row.settings), row.updated_at)


class ChannelPolicyRepository:
    def __init__(self, db: Database, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def get(self, platform: str, channel: str) -> StoredPolicy | None:
        with self._db.read() as session:
            row = session.get(ChannelPolicyRow, (platform, channel))
            return _stored(row) if row is not None else None

    def first(self, platform: str, channels: Sequence[str]) -> StoredPolicy | None:
        """The policy of the first of `channels` that has one, in one query: a message's
        channel, team and default are looked up on every message."""
        with self._db.read() as session:
            found = {row.channel: _stored(row) for row in session.execute(
                _FIRST, {"platform": platform, "channels": list(channels)})}
        return next((found[c] for c in channels if c in found), None)

    def all(self) -> list[StoredPolicy]:
        query = select(ChannelPolicyRow).order_by(ChannelPolicyRow.platform,
                                                  ChannelPolicyRow.channel)
        with self._db.read() as session:
            return [_stored(r) for r in session.scalars(query)]

    def put(self, platform: str, channel: str, label: str, settings: Mapping[str, Any]) -> None:
        """Create or replace one policy."""
        with self._db.write() as session:
            row = session.get(ChannelPolicyRow, (platform, channel))
            if row is None:
                row = ChannelPolicyRow(platform=platform, channel=channel)
                session.add(row)
            row.label, row.settings, row.updated_at = label, dict(settings), self._clock()

    def remove(self, platform: str, channel: str) -> bool:
        with self._db.write() as session:
            found = session.get(ChannelPolicyRow, (platform, channel)) is not None
            session.execute(delete(ChannelPolicyRow).where(
                ChannelPolicyRow.platform == platform, ChannelPolicyRow.channel == channel))
            return found

    def seed(self, policies: Iterable[tuple[str, str, str, Mapping[str, Any]]]) -> list[str]:
        """Add the policies the database does not have yet; returns the `platform:channel`
        keys it added (the database's own policies win: they may have been edited since)."""
        added = []
        with self._db.write() as session:
            for platform, channel, label, settings in policies:
                if session.get(ChannelPolicyRow, (platform, channel)) is None:
                    session.add(ChannelPolicyRow(platform=platform, channel=channel, label=label,
                                                 settings=dict(settings),
                                                 updated_at=self._clock()))
                    added.append(f"{platform}:{channel}")
        return added
