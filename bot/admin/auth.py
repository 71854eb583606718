"""Console sign-in: hashed passwords, server-side sessions with CSRF tokens, a login limit."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from bot.admin.passwords import PasswordHash
from storage.expiring import ExpiringStore

ADMIN, VIEWER = "admin", "viewer"


@dataclass(frozen=True)
class Credentials:
    """The role passwords as the settings hashed them when they loaded."""

    hashes: dict[str, PasswordHash]

    @classmethod
    def of(cls, admin: PasswordHash | None, viewer: PasswordHash | None) -> Credentials:
        return cls({role: h for role, h in ((ADMIN, admin), (VIEWER, viewer)) if h is not None})

    @property
    def enabled(self) -> bool:
        return ADMIN in self.hashes

    def role_for(self, password: str) -> str | None:
        """The role this password signs in as; every role is checked (constant work)."""
        found = None
        for role, expected in self.hashes.items():
            if expected.matches(password) and found is None:
                found = role
        return found


@dataclass
class Session:
    role: str
    csrf: str
    email: str = ""  # who, when the sign-in named them (OIDC); "" for a shared password
    # Names this sign-in, not the browser: the web chat keeps one conversation per sign-in,
    # so the next person on the same browser (or the same one after signing out) starts anew.
    conversation: str = ""


class Sessions:
    """Random opaque tokens, kept in the database so that every replica knows them (a load
    balancer may send each request elsewhere). Only a hash of the token is stored, and the
    CSRF token is derived from it: a copy of the database opens no session. A forged, or
    stolen-then-expired, cookie matches nothing; each use renews the idle timer."""

    def __init__(self, store: ExpiringStore, idle_s: float) -> None:
        self.store = store
        self.idle_s = idle_s

    async def open(self, role: str, email: str = "") -> tuple[str, Session]:
        token = secrets.token_urlsafe(32)
        await asyncio.to_thread(self.store.put, _key(token), {"role": role, "email": email},
                                self.idle_s)
        return token, Session(role, _csrf(token), email, _conversation(token))

    async def get(self, token: str | None) -> Session | None:
        """The live session for a cookie value, its idle timer renewed; None if unknown or
        expired."""
        if not token:
            return None
        found = await asyncio.to_thread(self.store.get, _key(token), renew_s=self.idle_s)
        if found is None:
            return None
        return Session(str(found["role"]), _csrf(token), str(found.get("email", "")),
                       _conversation(token))

    async def close(self, token: str | None) -> None:
        if token:
            await asyncio.to_thread(self.store.delete, _key(token))


def _key(token: str) -> str:
    return "session:" + hashlib.sha256(token.encode()).hexdigest()


def _csrf(token: str) -> str:
    return hmac.new(token.encode(), b"console csrf", hashlib.sha256).hexdigest()


def _conversation(token: str) -> str:
    """Derived like the CSRF token, so the database's conversation keys open no session."""
    return hmac.new(token.encode(), b"web chat conversation", hashlib.sha256).hexdigest()[:32]


# A guesser spread over many addresses: past this many failures (times the per-address
# limit) in the window, password sign-ins back off, each attempt waiting this long at most
# after the newest failure. Short, so the right password from elsewhere waits, never locks.
GLOBAL_FACTOR = 10
MAX_BACKOFF_S = 10.0
DEVICE_DAYS = 90


@dataclass(frozen=True)
class Wait:
    """How long an attempt must wait (0: it may try now), and why, for the page and the log."""

    seconds: float = 0.0
    everyone: bool = False  # the backoff every address shares, not this address's own limit


class LoginLimiter:
    """At most `attempts` failed sign-ins per client address per window: that address waits.
    Past ten times that from all addresses, every password sign-in backs off (at most
    MAX_BACKOFF_S after the newest failure), but never locks out: and a browser that signed
    in before (a device cookie, OWASP's answer to lock-outs) is not held back by strangers'
    failures at all. Counted in the database: replicas do not multiply a guesser's tries."""

    def __init__(self, store: ExpiringStore, attempts: int, window_s: float) -> None:
        self.store = store
        self.attempts = attempts
        self.window_s = window_s

    async def wait(self, address: str, device: str | None = None) -> Wait:
        """How long this client must wait; `device` is its device cookie, if any."""
        return await asyncio.to_thread(self._wait, address, device)

    def _wait(self, address: str, device: str | None) -> Wait:
        now = self.store.clock()
        own = self.store.expiries(_failures(address))
        if len(own) >= self.attempts:
            return Wait((own[len(own) - self.attempts] - now).total_seconds())
        if device and self.store.get(_device(device)) is not None:
            return Wait()
        everyone = self.store.expiries(_failures(""))
        threshold = self.attempts * GLOBAL_FACTOR
        if len(everyone) < threshold:
            return Wait()
        backoff = min(MAX_BACKOFF_S, 2.0 ** ((len(everyone) - threshold) // self.attempts))
        newest = everyone[-1] - timedelta(seconds=self.window_s)
        left = (newest - now).total_seconds() + backoff
        return Wait(left, everyone=True) if left > 0 else Wait()

    async def failed(self, address: str) -> int:
        """Count a failure; returns how many every address has in the window."""
        def count() -> int:
            self.store.count(_failures(address), self.window_s)
            return len(self.store.expiries(_failures("")))
        return await asyncio.to_thread(count)

    async def remember_device(self) -> str:
        """A new device token for a browser that just signed in (its cookie's value)."""
        token = secrets.token_urlsafe(32)
        await asyncio.to_thread(self.store.put, _device(token), {}, DEVICE_DAYS * 86400)
        return token


def _failures(address: str) -> str:
    """The key prefix of an address's failed sign-ins ("" for every address's). "|" appears
    in no address, so one address's prefix never covers another's (IPv6 has colons)."""
    return f"login-failure|{address}|" if address else "login-failure|"


def _device(token: str) -> str:
    return "login-device:" + hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()
