"""Console sign-in: hashed passwords, server-side sessions with CSRF tokens, a login limit."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from pydantic import SecretStr

from storage.expiring import ExpiringStore

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


class LoginLimiter:
    """At most `attempts` failed sign-ins per address per window, and ten times that overall
    (a guesser spread over many addresses meets the second limit). Counted in the database:
    several replicas do not multiply a guesser's attempts."""

    def __init__(self, store: ExpiringStore, attempts: int, window_s: float) -> None:
        self.store = store
        self.attempts = attempts
        self.window_s = window_s

    async def wait_s(self, address: str) -> float:
        """Seconds until this address may try again; 0 when it may now."""
        return await asyncio.to_thread(self._wait_s, address)

    def _wait_s(self, address: str) -> float:
        now = self.store.clock()
        free_at = [expiries[len(expiries) - cap]
                   for expiries, cap in ((self.store.expiries(_failures(address)), self.attempts),
                                         (self.store.expiries(_failures("")), self.attempts * 10))
                   if len(expiries) >= cap]
        return max(0.0, (max(free_at) - now).total_seconds()) if free_at else 0.0

    async def failed(self, address: str) -> None:
        await asyncio.to_thread(self.store.count, _failures(address), self.window_s)


def _failures(address: str) -> str:
    """The key prefix of an address's failed sign-ins ("" for every address's). "|" appears
    in no address, so one address's prefix never covers another's (IPv6 has colons)."""
    return f"login-failure|{address}|" if address else "login-failure|"
