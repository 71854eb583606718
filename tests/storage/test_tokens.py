"""Personal access tokens on SQLite and PostgreSQL: only a hash kept, expiry and revocation."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text

from storage.db import Database
from storage.tokens import PREFIX, TokenRepository, secret_hash
from tests.storage.clock import Clock


def test_a_token_is_shown_once_and_only_its_hash_is_stored(database: Database) -> None:
    tokens = TokenRepository(database, clock=Clock())
    made = tokens.create("ada@example.com", expires_in=timedelta(days=90), label="Claude")
    assert made.secret.startswith(PREFIX) and len(made.secret) >= len(PREFIX) + 40
    with database.read() as session:
        row = session.execute(text("SELECT * FROM access_tokens")).mappings().one()
    assert made.secret not in " ".join(str(v) for v in row.values())
    assert row["secret_hash"] == secret_hash(made.secret)
    assert row["hint"] == made.secret[:15] + "…"
    found = tokens.verify(made.secret)
    assert found is not None and (found.id, found.email) == (made.token.id, "ada@example.com")


def test_wrong_expired_and_revoked_tokens_open_nothing(database: Database) -> None:
    clock = Clock()
    tokens = TokenRepository(database, clock=clock)
    short = tokens.create("ada@example.com", expires_in=timedelta(hours=1))
    kept = tokens.create("ada@example.com", expires_in=None)
    revoked = tokens.create("bob@example.com", expires_in=None)
    assert tokens.revoke(revoked.token.id) is not None
    for wrong in ("", "sift_pat_", PREFIX + "x" * 43, short.secret[:-1], "Bearer " + kept.secret,
                  short.secret.upper(), revoked.secret):
        assert tokens.verify(wrong) is None, wrong
    assert tokens.verify(short.secret) is not None
    clock.advance(hours=1)
    assert tokens.verify(short.secret) is None  # expired at its hour, not after
    assert tokens.verify(kept.secret) is not None
    states = {t.id: t.state(clock.now) for t in tokens.list()}
    assert states == {short.token.id: "expired", kept.token.id: "active",
                      revoked.token.id: "revoked"}
    assert tokens.revoke(9999) is None


def test_use_is_noted_at_most_every_few_minutes(database: Database) -> None:
    clock = Clock()
    tokens = TokenRepository(database, clock=clock)
    made = tokens.create("ada@example.com", expires_in=None)
    tokens.verify(made.secret)
    first = tokens.list()[0].last_used_at
    assert first == clock.now
    clock.advance(minutes=1)
    tokens.verify(made.secret)
    assert tokens.list()[0].last_used_at == first
    clock.advance(minutes=5)
    tokens.verify(made.secret)
    assert tokens.list()[0].last_used_at == clock.now
