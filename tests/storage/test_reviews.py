"""Review dates: a document is verified for its source's interval after it last changed or
its owner confirmed it, due in the last two weeks, expired after; owners are reminded once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage.db import Database
from storage.reviews import DUE, EXPIRED, VERIFIED, DocumentReviews
from storage.sync_state import SyncStateRepository
from tests.storage.clock import Clock

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def synced(db: Database, source: str, doc_id: str, changed: datetime | None) -> None:
    SyncStateRepository(db).record_document(source, doc_id, content_hash="h", chunk_count=1,
                                            updated_at=changed)


def test_states_follow_the_sources_interval_from_the_last_change(database: Database) -> None:
    synced(database, "handbook", "fresh.md", NOW - timedelta(days=10))
    synced(database, "handbook", "soon.md", NOW - timedelta(days=80))  # 10 days left
    synced(database, "handbook", "old.md", NOW - timedelta(days=200))
    synced(database, "handbook", "undated.md", None)
    synced(database, "wiki", "anything.md", NOW - timedelta(days=999))  # not reviewed
    reviews = DocumentReviews(database, {"handbook": 90}, Clock(NOW))
    states = {r.doc_id: r.state for r in reviews.states()}
    assert states == {"fresh.md": VERIFIED, "soon.md": DUE, "old.md": EXPIRED,
                      "undated.md": EXPIRED}
    # Soonest due first: the never-verified one, then by date.
    assert [r.doc_id for r in reviews.states()] == ["undated.md", "old.md", "soon.md",
                                                    "fresh.md"]
    [soon] = reviews.states(["soon.md"])
    assert soon.review_by == NOW + timedelta(days=10)
    assert reviews.overdue(["fresh.md", "old.md", "undated.md", "anything.md"]) == {
        "old.md": NOW - timedelta(days=200), "undated.md": None}
    assert reviews.overdue([]) == {}


def test_an_owners_confirmation_verifies_it_from_then_and_names_who(database: Database) -> None:
    synced(database, "handbook", "old.md", NOW - timedelta(days=200))
    clock = Clock(NOW)
    reviews = DocumentReviews(database, {"handbook": 90}, clock)
    reviews.keep("handbook", "old.md", "U0DANA001")
    [kept] = reviews.states(["old.md"])
    assert (kept.state, kept.last_reviewed, kept.verified_by) == (VERIFIED, NOW, "U0DANA001")
    assert reviews.overdue(["old.md"]) == {}
    clock.advance(days=91)
    assert reviews.overdue(["old.md"]) == {"old.md": NOW}
    # A later change to the document itself counts as newer than the confirmation.
    synced(database, "handbook", "old.md", clock.now)
    [changed] = reviews.states(["old.md"])
    assert (changed.state, changed.last_reviewed, changed.verified_by) == \
        (VERIFIED, clock.now, "")


def test_an_owner_is_reminded_once_per_review_period(database: Database) -> None:
    synced(database, "handbook", "old.md", NOW - timedelta(days=200))
    synced(database, "handbook", "fresh.md", NOW)
    clock = Clock(NOW)
    reviews = DocumentReviews(database, {"handbook": 90}, clock)
    assert [r.doc_id for r in reviews.to_remind()] == ["old.md"]
    reviews.reminded("handbook", "old.md")
    assert reviews.to_remind() == []
    reviews.keep("handbook", "old.md", "U0DANA001")  # confirmed: a new period begins
    clock.advance(days=85)  # due again
    assert {r.doc_id for r in reviews.to_remind()} == {"old.md", "fresh.md"}


def test_without_intervals_nothing_is_reviewed(database: Database) -> None:
    synced(database, "handbook", "old.md", NOW - timedelta(days=999))
    reviews = DocumentReviews(database, {}, Clock(NOW))
    assert reviews.states() == [] and reviews.overdue(["old.md"]) == {}
