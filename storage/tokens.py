"""Personal access tokens: made once (the secret shown to its maker, only its hash kept),
checked on every API and MCP call, listed, revoked."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, bindparam, insert, select, update

from storage.columns import utc_now
from storage.db import Database
from storage.models import AccessTokenRow, table

# Secret scanners (GitHub's, gitleaks) match a fixed prefix; the rest is 32 random bytes.
PREFIX = "sift_pat_"
HINT_CHARS = len(PREFIX) + 6
# A token's last use is written at most this often: a busy token would else write per call.
TOUCH_EVERY = timedelta(minutes=5)

_tokens = table(AccessTokenRow)
_BY_HASH = select(_tokens).where(_tokens.c.secret_hash == bindparam("h"))
_TOUCH = update(_tokens).where(_tokens.c.id == bindparam("i")).values(
    last_used_at=bindparam("now"))


def secret_hash(secret: str) -> str:
    """SHA-256 is enough: the secret is 256 random bits, not a password to guess."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AccessToken:
    """A stored token, never its secret."""

    id: int
    hint: str  # "sift_pat_Ab12Cd…": enough to tell two tokens apart in a list
    email: str
    label: str
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None

    def state(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"

    def as_json(self, now: datetime) -> dict[str, object]:
        def when(value: datetime | None) -> str | None:
            return value.isoformat() if value is not None else None

        return {"id": self.id, "hint": self.hint, "email": self.email, "label": self.label,
                "created_by": self.created_by, "created_at": when(self.created_at),
                "expires_at": when(self.expires_at), "revoked_at": when(self.revoked_at),
                "last_used_at": when(self.last_used_at), "state": self.state(now)}


@dataclass(frozen=True)
class MadeToken:
    token: AccessToken
    secret: str  # shown once, to the person who made it


def _row(r: Row[Any]) -> AccessToken:
    m = r._mapping
    return AccessToken(m["id"], m["hint"], m["email"], m["label"], m["created_by"],
                       m["created_at"], m["expires_at"], m["revoked_at"], m["last_used_at"])


class TokenRepository:
    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def create(self, email: str, *, expires_in: timedelta | None, label: str = "",
               created_by: str = "") -> MadeToken:
        secret = PREFIX + secrets.token_urlsafe(32)
        now = self._clock()
        hint = secret[:HINT_CHARS] + "…"
        expires_at = now + expires_in if expires_in is not None else None
        with self._db.write() as session:
            new_id = session.execute(insert(_tokens).values(
                secret_hash=secret_hash(secret), hint=hint, email=email, label=label,
                created_by=created_by, created_at=now, expires_at=expires_at,
            ).returning(_tokens.c.id)).scalar_one()
        return MadeToken(AccessToken(int(new_id), hint, email, label, created_by, now,
                                     expires_at, None, None), secret)

    def verify(self, secret: str) -> AccessToken | None:
        """The active token whose secret this is; None for anything else (unknown, revoked,
        expired, not even shaped like a token)."""
        if not secret.startswith(PREFIX) or len(secret) > 200:
            return None
        now = self._clock()
        with self._db.read() as session:
            found = session.execute(_BY_HASH, {"h": secret_hash(secret)}).first()
        if found is None:
            return None
        token = _row(found)
        if token.state(now) != "active":
            return None
        if token.last_used_at is None or now - token.last_used_at >= TOUCH_EVERY:
            with self._db.write_one() as session:
                session.execute(_TOUCH, {"i": token.id, "now": now})
        return token

    def list(self, *, email: str = "") -> list[AccessToken]:
        query = select(_tokens).order_by(_tokens.c.id)
        if email:
            query = query.where(_tokens.c.email == email)
        with self._db.read() as session:
            return [_row(r) for r in session.execute(query)]

    def revoke(self, token_id: int) -> AccessToken | None:
        """Revoke one token (a second revocation keeps the first time); None if unknown."""
        now = self._clock()
        with self._db.write() as session:
            session.execute(update(_tokens).where(
                _tokens.c.id == token_id, _tokens.c.revoked_at.is_(None)).values(revoked_at=now))
            found = session.execute(select(_tokens).where(_tokens.c.id == token_id)).first()
        return _row(found) if found is not None else None
