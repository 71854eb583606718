"""Console sign-in: hashed passwords, server-side sessions with CSRF tokens, a login limit."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import SecretStr

ADMIN, VIEWER = "admin", "viewer"
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}


def _hash(password: str, salt: bytes) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, **_SCRYPT)


@dataclass(frozen=True)
class Credentials:
    """The role passwords as salted scrypt hashes; the plain text is not kept."""

    salt: bytes
    hashes: dict[str, bytes]

    @classmethod
    def from_secrets(cls, admin: SecretStr | None, viewer: SecretStr | None) -> Credentials:
        salt = secrets.token_bytes(16)
        hashes = {role: _hash(s.get_secret_value(), salt)
                  for role, s in ((ADMIN, admin), (VIEWER, viewer)) if s is not None}
        return cls(salt, hashes)

    @property
    def enabled(self) -> bool:
        return ADMIN in self.hashes

    def role_for(self, password: str) -> str | None:
        """The role this password signs in as; every role is compared (constant work)."""
        given = _hash(password, self.salt)
        found = None
        for role, expected in self.hashes.items():
            if hmac.compare_digest(given, expected) and found is None:
                found = role
        return found


@dataclass
class Session:
    role: str
    csrf: str
    expires: float
    email: str = ""  # who, when the sign-in named them (OIDC); "" for a shared password


@dataclass
class Sessions:
    """Random opaque tokens held in memory: a restart signs everyone out, a forged or stolen-
    then-expired cookie matches nothing."""

    idle_s: float
    clock: Callable[[], float] = time.monotonic
    _by_token: dict[str, Session] = field(default_factory=dict)

    def open(self, role: str, email: str = "") -> tuple[str, Session]:
        self._sweep()
        token = secrets.token_urlsafe(32)
        session = Session(role, secrets.token_urlsafe(32), self.clock() + self.idle_s, email)
        self._by_token[token] = session
        return token, session

    def get(self, token: str | None) -> Session | None:
        """The live session for a cookie value, its idle timer renewed; None if unknown or
        expired."""
        session = self._by_token.get(token or "")
        if session is None:
            return None
        now = self.clock()
        if session.expires <= now:
            del self._by_token[token or ""]
            return None
        session.expires = now + self.idle_s
        return session

    def close(self, token: str | None) -> None:
        self._by_token.pop(token or "", None)

    def _sweep(self) -> None:
        now = self.clock()
        for token in [t for t, s in self._by_token.items() if s.expires <= now]:
            del self._by_token[token]


@dataclass
class LoginLimiter:
    """At most `attempts` failed sign-ins per address per window, and ten times that overall
    (a guesser spread over many addresses meets the second limit)."""

    attempts: int
    window_s: float
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, deque[float]] = field(default_factory=dict)
    _all: deque[float] = field(default_factory=deque)

    def _recent(self, times: deque[float]) -> deque[float]:
        horizon = self.clock() - self.window_s
        while times and times[0] <= horizon:
            times.popleft()
        return times

    def wait_s(self, address: str) -> float:
        """Seconds until this address may try again; 0 when it may now."""
        mine = self._recent(self._failures.setdefault(address, deque()))
        overall = self._recent(self._all)
        blocking = [q[0] for q, cap in ((mine, self.attempts), (overall, self.attempts * 10))
                    if len(q) >= cap]
        return max(0.0, max(blocking) + self.window_s - self.clock()) if blocking else 0.0

    def failed(self, address: str) -> None:
        now = self.clock()
        self._failures.setdefault(address, deque()).append(now)
        self._all.append(now)
        if len(self._failures) > 10_000:  # bound memory against address churn
            self._failures = {a: q for a, q in self._failures.items() if self._recent(q)}
