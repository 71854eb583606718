"""Votes: one per person per answer, mirrored onto the thumbs of the documents it cited."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from storage.db import Database
from storage.errors import StorageError, UnknownInteraction
from storage.feedback import FeedbackRepository, thumbs_delta
from storage.interactions import InteractionRepository
from storage.models import DocumentStats, Feedback
from tests.storage.builders import answer, cand


def _thumbs(db: Database) -> dict[str, tuple[int, int]]:
    with db.read() as session:
        return {s.doc_id: (s.thumbs_up, s.thumbs_down)
                for s in session.scalars(select(DocumentStats))}


def _feedback_rows(db: Database) -> list[tuple[int, str, int, str, str | None]]:
    with db.read() as session:
        rows = session.scalars(select(Feedback).order_by(Feedback.id))
        return [(f.interaction_id, f.user_id, f.vote, f.channel, f.comment) for f in rows]


@pytest.fixture
def cited_interaction(database: Database) -> int:
    """An answer that cited mfa (two chunks) and kb, and only retrieved vpn."""
    return InteractionRepository(database).record(answer("q", [
        cand("mfa", 0, rank=1, score=0.9, selected=True, cited=True),
        cand("mfa", 1, rank=2, score=0.8, selected=True, cited=True),
        cand("kb", 0, rank=3, score=0.7, selected=True, cited=True),
        cand("vpn", 0, rank=4, score=0.1),
    ]))


@pytest.mark.parametrize(("old", "new", "delta"), [
    (None, 1, (1, 0)), (None, -1, (0, 1)), (1, -1, (-1, 1)), (-1, 1, (1, -1)),
    (1, 1, (0, 0)), (-1, -1, (0, 0)), (1, None, (-1, 0)), (-1, None, (0, -1)),
    (None, None, (0, 0)),
])
def test_thumbs_delta(old: int | None, new: int | None, delta: tuple[int, int]) -> None:
    assert thumbs_delta(old, new) == delta


# (steps, expected thumbs on each cited doc, expected stored votes)
SCENARIOS = [
    pytest.param([("vote", "U1", 1)], (1, 0), {"U1": 1}, id="up"),
    pytest.param([("vote", "U1", -1)], (0, 1), {"U1": -1}, id="down"),
    pytest.param([("vote", "U1", 1), ("vote", "U1", -1)], (0, 1), {"U1": -1},
                 id="second-vote-replaces-the-first"),
    pytest.param([("vote", "U1", 1), ("vote", "U1", 1)], (1, 0), {"U1": 1},
                 id="same-vote-twice-counts-once"),
    pytest.param([("vote", "U1", 1), ("retract", "U1", 0)], (0, 0), {}, id="retract"),
    pytest.param([("retract", "U1", 0)], (0, 0), {}, id="retract-without-vote"),
    pytest.param([("vote", "U1", 1), ("vote", "U2", -1), ("vote", "U3", -1),
                  ("retract", "U3", 0), ("vote", "U2", 1)], (2, 0), {"U1": 1, "U2": 1},
                 id="several-people"),
]


@pytest.mark.parametrize(("cast", "removed", "taken_back", "thumbs"), [
    ((1, "reaction"), (1, "reaction"), True, (0, 0)),
    ((1, "button"), (1, "reaction"), False, (1, 0)),  # a click is not the reaction's to undo
    ((-1, "reaction"), (1, "reaction"), False, (0, 1)),  # 👍 removed after a 👎 replaced it
])
def test_retract_matching_takes_back_only_its_own_vote(
        database: Database, cited_interaction: int, cast: tuple[int, str],
        removed: tuple[int, str], taken_back: bool, thumbs: tuple[int, int]) -> None:
    feedback = FeedbackRepository(database)
    feedback.vote(cited_interaction, "U1", *cast)
    assert feedback.retract_matching(cited_interaction, "U1", *removed) is taken_back
    assert _thumbs(database) == {"mfa": thumbs, "kb": thumbs, "vpn": (0, 0)}
    assert feedback.votes(cited_interaction) == ({} if taken_back else {"U1": cast[0]})


@pytest.mark.parametrize(("steps", "thumbs", "votes"), SCENARIOS)
def test_votes_move_the_thumbs_of_cited_documents(
        database: Database, cited_interaction: int, steps: list[tuple[str, str, int]],
        thumbs: tuple[int, int], votes: dict[str, int]) -> None:
    feedback = FeedbackRepository(database)
    for action, user, vote in steps:
        if action == "vote":
            feedback.vote(cited_interaction, user, vote, "reaction")
        else:
            feedback.retract(cited_interaction, user)
    # Cited documents count once per vote however many of their chunks were cited; a merely
    # retrieved document is untouched.
    assert _thumbs(database) == {"mfa": thumbs, "kb": thumbs, "vpn": (0, 0)}
    assert feedback.votes(cited_interaction) == votes


def test_vote_keeps_channel_and_comment(database: Database, cited_interaction: int) -> None:
    feedback = FeedbackRepository(database)
    feedback.vote(cited_interaction, "U1", -1, "button", comment="outdated")
    feedback.vote(cited_interaction, "U1", -1, "reaction")  # no comment: keep the old one
    assert _feedback_rows(database) == [(cited_interaction, "U1", -1, "reaction", "outdated")]
    feedback.add_comment(cited_interaction, "U1", "the VPN steps changed")
    assert _feedback_rows(database)[0][4] == "the VPN steps changed"


def test_comment_without_a_vote_is_ignored(database: Database, cited_interaction: int) -> None:
    FeedbackRepository(database).add_comment(cited_interaction, "U9", "why?")
    assert _feedback_rows(database) == []


def test_store_text_off_hashes_comments(database: Database, cited_interaction: int) -> None:
    feedback = FeedbackRepository(database, store_text=False)
    feedback.vote(cited_interaction, "U1", -1, "terminal", comment="my email is a@b.c")
    comment = _feedback_rows(database)[0][4]
    assert comment is not None and comment.startswith("sha256:") and "a@b.c" not in comment


@pytest.mark.parametrize("action", ["vote", "retract", "add_comment"])
def test_unknown_interaction_is_a_clear_error_and_writes_nothing(
        database: Database, cited_interaction: int, action: str) -> None:
    feedback = FeedbackRepository(database)
    calls = {"vote": lambda: feedback.vote(999, "U1", 1, "reaction", comment="x"),
             "retract": lambda: feedback.retract(999, "U1"),
             "add_comment": lambda: feedback.add_comment(999, "U1", "x")}
    with pytest.raises(UnknownInteraction, match=re.escape(
            "No interaction with id 999: it was never recorded or has been purged; "
            "nothing was written.")):
        calls[action]()
    assert _feedback_rows(database) == []
    assert set(_thumbs(database).values()) == {(0, 0)}


@pytest.mark.parametrize("bad", [0, 2, -2])
def test_a_vote_must_be_plus_or_minus_one(database: Database, cited_interaction: int,
                                          bad: int) -> None:
    with pytest.raises(StorageError, match=f"A vote is \\+1 or -1, not {bad}"):
        FeedbackRepository(database).vote(cited_interaction, "U1", bad, "reaction")
    with database.read() as session:
        assert session.scalar(select(func.count()).select_from(Feedback)) == 0


def test_votes_on_an_uncited_answer_change_no_document(database: Database) -> None:
    iid = InteractionRepository(database).record(answer("q", [cand("vpn", 0, score=0.2)]))
    FeedbackRepository(database).vote(iid, "U1", -1, "reaction")
    assert _thumbs(database) == {"vpn": (0, 0)}
    assert _feedback_rows(database) == [(iid, "U1", -1, "reaction", None)]
