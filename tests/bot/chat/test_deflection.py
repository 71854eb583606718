"""Deflection: the holdout share over 1,000 questions, Wilson intervals, and a scripted week
of help threads whose figures match a count by hand."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.chat.deflection import Outcomes, by_arm, deflection, held_out, wilson
from bot.chat.message import ChatMessage, Kind
from bot.chat.policy import ChannelPolicy, Respond
from bot.cli.report_deflection import as_json
from storage.db import Database
from storage.outcomes import BY_PERSON, BY_SIFT, HOLDOUT, SIFT, HelpOutcomes

MONDAY = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)  # a week of threads from here
HELP = ChannelPolicy("slack", "C0HELP", respond=Respond.QUESTIONS, holdout=0.05)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    database.upgrade()
    yield database
    database.dispose()


def question(n: int) -> ChatMessage:
    ts = f"{1764000000 + n * 7}.{n:06d}"
    return ChatMessage("slack", Kind.CHANNEL, f"slack:Ev{n}", "T1", "C0HELP", "", f"U{n % 40}",
                       "How do I get a badge?", ts=ts)


async def test_the_holdout_share_lands_within_tolerance_over_1000_questions(
        db: Database) -> None:
    outcomes = Outcomes(HelpOutcomes(db))
    held = [await outcomes.hold_out(question(n), HELP) for n in range(1000)]
    rows = HelpOutcomes(db).since(MONDAY - timedelta(days=3650))
    assert len(rows) == 1000 and sum(held) == sum(r.arm == HOLDOUT for r in rows)
    # 5% of 1,000 is 50, with a binomial standard deviation of sqrt(1000 * .05 * .95) = 6.9:
    # two of them either side (the draw is a hash of the message id, so never flaky; half
    # or twice the share, 2.5% or 10%, falls outside).
    assert 50 - 14 <= sum(held) <= 50 + 14
    # A redelivery draws the same way and is recorded once.
    again = [await outcomes.hold_out(question(n), HELP) for n in range(20)]
    assert again == held[:20] and len(HelpOutcomes(db).since(MONDAY - timedelta(3650))) == 1000


async def test_mentions_and_other_channels_are_never_held_out(db: Database) -> None:
    outcomes = Outcomes(HelpOutcomes(db))
    mention = ChatMessage("slack", Kind.MENTION, "slack:Ev1", "T1", "C0HELP", "", "U1", "q?",
                          ts="1764000000.000001")
    plain = ChannelPolicy("slack", "C0OTHER")
    assert not await outcomes.hold_out(mention, ChannelPolicy(
        "slack", "C0HELP", respond=Respond.QUESTIONS, holdout=0.5))
    assert not await outcomes.hold_out(question(1), plain)
    assert HelpOutcomes(db).since(MONDAY - timedelta(3650)) == []


def test_no_share_holds_nothing_out_and_the_draw_is_stable() -> None:
    assert not any(held_out(f"k{n}", 0.0) for n in range(500))
    assert [held_out(f"k{n}", 0.3) for n in range(50)] == \
        [held_out(f"k{n}", 0.3) for n in range(50)]


@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    (8, 10, 0.4902, 0.9433),  # Wilson's 95% interval as statistics texts tabulate it
    (0, 10, 0.0, 0.2775),
    (50, 100, 0.4038, 0.5962),
])
def test_wilson_interval(successes: int, n: int, low: float, high: float) -> None:
    got = wilson(successes, n)
    assert math.isclose(got[0], low, abs_tol=5e-4) and math.isclose(got[1], high, abs_tol=5e-4)


def at(day: int, hour: float) -> datetime:
    return MONDAY + timedelta(days=day, hours=hour)


def scripted_week(store: HelpOutcomes) -> None:
    """Ten help threads, as the chat flow records them."""
    def ask(n: int, arm: str, day: int) -> str:
        thread = f"1764{n:06d}.000100"
        store.asked("slack", "C0HELP", thread, "UASK", arm, at=at(day, 0))
        return thread

    def answer(thread: str, day: int, seconds: float, status: str = "answered") -> None:
        store.answered("slack", "C0HELP", thread, None, status,
                       at=at(day, 0) + timedelta(seconds=seconds))

    q1 = ask(1, SIFT, 0)  # answered in 30 s, the asker's 👍
    answer(q1, 0, 30)
    store.resolved("slack", "C0HELP", q1, BY_SIFT, "UASK", at=at(0, 0.1))
    q2 = ask(2, SIFT, 0)  # answered in 20 s, nobody replies
    answer(q2, 0, 20)
    q3 = ask(3, SIFT, 1)  # answered, a colleague replies after an hour
    answer(q3, 1, 15)
    store.replied("slack", "C0HELP", q3, "UDANA", at=at(1, 1))
    q4 = ask(4, SIFT, 2)  # answered, "Still need help?", a colleague after two hours
    answer(q4, 2, 25)
    store.help_requested("slack", "C0HELP", q4)
    store.replied("slack", "C0HELP", q4, "UDANA", at=at(2, 2))
    q5 = ask(5, SIFT, 3)  # "not covered"; a colleague in 30 min, the asker's ✅ on it
    answer(q5, 3, 12, "no_answer")
    store.replied("slack", "C0HELP", q5, "UASK", at=at(3, 0.2))  # the asker's own: ignored
    store.replied("slack", "C0HELP", q5, "UDANA", at=at(3, 0.5))
    store.resolved("slack", "C0HELP", q5, BY_PERSON, "UASK", at=at(3, 0.6))
    q6 = ask(6, SIFT, 4)  # "not covered", nobody comes
    answer(q6, 4, 10, "no_answer")
    q7 = ask(7, SIFT, 4)  # answered in 10 s; a colleague chimes in after five hours
    answer(q7, 4, 10)
    store.replied("slack", "C0HELP", q7, "UDANA", at=at(4, 5))
    h1 = ask(8, HOLDOUT, 1)  # held out: a colleague in 40 min
    store.replied("slack", "C0HELP", h1, "UDANA", at=at(1, 40 / 60))
    ask(9, HOLDOUT, 2)  # held out: nobody
    h3 = ask(10, HOLDOUT, 5)  # held out: a colleague in 20 min, the asker's ✅
    store.replied("slack", "C0HELP", h3, "UDANA", at=at(5, 20 / 60))
    store.resolved("slack", "C0HELP", h3, BY_PERSON, "UASK", at=at(5, 0.5))
    store.resolved("slack", "C0HELP", h3, BY_SIFT, "UDANA")  # not the asker: no effect


def test_a_scripted_week_matches_the_hand_count(db: Database) -> None:
    store = HelpOutcomes(db)
    scripted_week(store)
    with_sift, holdout = by_arm(store.since(MONDAY), at(7, 0))
    # By hand: q1, q2, q7 by Sift; q3, q4, q5 by a person; q6 unresolved.
    assert (with_sift.questions, with_sift.by_sift, with_sift.by_person,
            with_sift.unresolved) == (7, 3, 3, 1)
    assert with_sift.resolution_rate == pytest.approx(6 / 7)
    # Useful replies: 30, 20, 10 s (Sift); 3600, 7200, 1800 s (people): median of the six.
    assert with_sift.median_first_useful_s == pytest.approx((30 + 1800) / 2)
    # Holdout: h1 and h3 by a person, h2 unresolved; replies after 40 and 20 minutes.
    assert (holdout.questions, holdout.by_sift, holdout.by_person, holdout.unresolved) == \
        (3, 0, 2, 1)
    assert holdout.resolution_rate == pytest.approx(2 / 3)
    assert holdout.median_first_useful_s == pytest.approx(30 * 60)
    assert (round(holdout.ci_low, 3), round(holdout.ci_high, 3)) == (0.208, 0.939)


def test_the_report_splits_the_week_by_iso_week_and_channel(db: Database) -> None:
    store = HelpOutcomes(db)
    scripted_week(store)
    data = as_json(deflection(store.since(MONDAY), at(7, 0)))
    assert [(w["week"], w["channel"]) for w in data["weeks"]] == [("2026-W48", "C0HELP")]
    assert [a["questions"] for a in data["overall"]] == [7, 3]
    # A question still inside the quiet window is not yet Sift's: q2 an hour after its answer.
    early = by_arm(store.since(MONDAY), at(0, 1))[0]
    assert early.by_sift == 1  # q1 only, by its 👍
