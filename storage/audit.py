"""The audit log: each admin action with who, from where, what, and before -> after."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select

from storage.columns import utc_now
from storage.db import Database
from storage.models import AuditEntry, table

_audit = table(AuditEntry)


@dataclass(frozen=True)
class AuditEvent:
    at: datetime
    actor: str  # "ada@example.com", "admin" (a shared password), "cli:root"
    action: str  # sign_in, sign_in_failed, policy_saved, policy_removed, override, sync_started
    target: str = ""  # what it acted on: "slack:C0123", "document d22", "source handbook"
    address: str = ""  # the client's address (bot/proxy.py), "" from the command line
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(), "actor": self.actor, "action": self.action,
                "target": self.target, "address": self.address,
                "before": None if self.before is None else dict(self.before),
                "after": None if self.after is None else dict(self.after)}


class AuditLog:
    """Appends entries and reads them back, newest first; `purge` applies the retention."""

    def __init__(self, db: Database, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def record(self, actor: str, action: str, target: str = "", *, address: str = "",
               before: Mapping[str, Any] | None = None,
               after: Mapping[str, Any] | None = None) -> AuditEvent:
        event = AuditEvent(self._clock(), actor or "?", action, target, address,
                           before, after)
        with self._db.write() as session:
            session.execute(insert(_audit), [{
                "created_at": event.at, "actor": event.actor[:255], "action": action,
                "target": target, "address": address[:64],
                "before": None if before is None else dict(before),
                "after": None if after is None else dict(after)}])
        return event

    def since(self, when: datetime, *, action: str = "", limit: int = 1000) -> list[AuditEvent]:
        query = select(_audit).where(_audit.c.created_at >= when)
        if action:
            query = query.where(_audit.c.action == action)
        query = query.order_by(_audit.c.created_at.desc(), _audit.c.id.desc()).limit(limit)
        with self._db.read() as session:
            rows = session.execute(query).mappings().all()
        return [AuditEvent(r["created_at"], r["actor"], r["action"], r["target"], r["address"],
                           r["before"], r["after"]) for r in rows]

    def purge(self, older_than: datetime) -> int:
        """Delete the entries made before `older_than`; how many went."""
        with self._db.write() as session:
            result: Any = session.execute(delete(_audit).where(_audit.c.created_at < older_than))
        return int(result.rowcount)
