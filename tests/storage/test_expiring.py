"""Short-lived shared state: values that expire or slide, taken once, counted per prefix."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from storage.db import Database
from storage.dedupe import DedupeRepository
from storage.expiring import ExpiringStore
from tests.storage.clock import Clock


def test_a_value_lives_until_it_expires(database: Database) -> None:
    clock = Clock()
    store = ExpiringStore(database, clock=clock)
    store.put("session:a", {"role": "admin", "email": ""}, 60)
    clock.advance(seconds=59)
    assert store.get("session:a") == {"role": "admin", "email": ""}
    clock.advance(seconds=2)
    assert store.get("session:a") is None
    assert store.take("session:a") is None  # expired is gone for take too


def test_renewing_slides_the_expiry_and_put_replaces(database: Database) -> None:
    clock = Clock()
    store = ExpiringStore(database, clock=clock)
    store.put("session:a", {"n": 1}, 60)
    for _ in range(3):  # used every 50 s: alive after 150 s with a 60 s idle limit
        clock.advance(seconds=50)
        assert store.get("session:a", renew_s=60) == {"n": 1}
    store.put("session:a", {"n": 2}, 60)
    assert store.get("session:a") == {"n": 2}
    store.delete("session:a")
    assert store.get("session:a", renew_s=60) is None


def test_a_value_is_taken_once_across_processes(db_url: str, database: Database) -> None:
    ExpiringStore(database).put("oidc-pending:x", {"nonce": "n"}, 600)
    handles = [database] * 3 + [Database(db_url) for _ in range(3)]
    start = threading.Barrier(len(handles))

    def take(db: Database) -> object:
        start.wait()
        return ExpiringStore(db).take("oidc-pending:x")

    with ThreadPoolExecutor(len(handles)) as pool:
        results = list(pool.map(take, handles))
    assert results.count({"nonce": "n"}) == 1 and results.count(None) == 5
    for db in handles[3:]:
        db.dispose()


def test_counts_are_per_prefix_and_expire(database: Database) -> None:
    clock = Clock()
    start = clock.now
    store = ExpiringStore(database, clock=clock)
    for _ in range(3):
        store.count("login-failure|10.0.0.1|", 300)
        clock.advance(seconds=10)
    store.count("login-failure|10.0.0.10|", 300)  # a longer address: not counted above
    assert len(store.expiries("login-failure|10.0.0.1|")) == 3
    assert len(store.expiries("login-failure|")) == 4
    assert store.expiries("login-failure|10.0.0.1|") == [
        start + timedelta(seconds=s) for s in (300, 310, 320)]  # earliest first
    clock.advance(seconds=285)  # now start + 315 s: the first two (300 s, 310 s) have expired
    assert len(store.expiries("login-failure|10.0.0.1|")) == 1


def test_expired_state_is_pruned_with_event_claims(database: Database) -> None:
    clock = Clock()
    store = ExpiringStore(database, clock=clock)
    store.put("session:a", {"role": "viewer"}, 60)
    store.count("login-failure|::1|", 60)
    clock.advance(seconds=61)
    assert DedupeRepository(database, clock=clock).prune() == 2
