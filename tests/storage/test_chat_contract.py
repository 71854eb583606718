"""The chat stores' contract, held the same by the repositories (SQLite, PostgreSQL) and the
in-memory fakes that the adapter tests use: a fake that drifts would let those tests lie."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from bot.chat.service import ChatStores
from rag.ports import InteractionRecorder
from storage.db import Database
from storage.dedupe import DedupeRepository
from storage.errors import StorageError, UnknownInteraction
from storage.feedback import FeedbackRepository
from storage.history import HistoryRepository
from storage.interactions import InteractionRepository
from storage.quota import QuotaRepository
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.storage.builders import answer, cand
from tests.storage.conftest import BACKENDS, empty_database


@dataclass
class Stores:
    recorder: InteractionRecorder
    chat: ChatStores


@pytest.fixture(params=[pytest.param("memory", id="memory"), *BACKENDS])
def stores(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    if request.param == "memory":
        memory = MemoryChatStores()
        yield Stores(memory.interactions, memory.chat_stores())
        return
    with empty_database(request, request.param, tmp_path_factory) as url:
        db = Database(url)
        db.upgrade()
        interactions = InteractionRepository(db)
        yield Stores(interactions, ChatStores(DedupeRepository(db), interactions,
                                              FeedbackRepository(db), HistoryRepository(db),
                                              QuotaRepository(db)))
        db.dispose()


def recorded(stores: Stores, user: str = "U1") -> int:
    return stores.recorder.record(answer("How do I reset MFA?", [
        cand("mfa", 0, rank=1, score=0.9, selected=True, cited=True)], user=user))


@pytest.mark.parametrize("bad", [0, 2, -2])
def test_a_vote_is_plus_or_minus_one(stores: Stores, bad: int) -> None:
    interaction = recorded(stores)
    with pytest.raises(StorageError):
        stores.chat.feedback.vote(interaction, "U2", bad, "button")


def test_votes_on_an_unknown_answer_are_refused(stores: Stores) -> None:
    with pytest.raises(UnknownInteraction):
        stores.chat.feedback.vote(999, "U2", 1, "button")
    with pytest.raises(UnknownInteraction):
        stores.chat.links.attach_message(999, "C1", "1.1")


def test_retract_matching_takes_back_only_the_same_vote_from_the_same_place(
        stores: Stores) -> None:
    interaction = recorded(stores)
    feedback = stores.chat.feedback
    feedback.vote(interaction, "U2", 1, "reaction")
    assert not feedback.retract_matching(interaction, "U2", 1, "button")
    assert not feedback.retract_matching(interaction, "U2", -1, "reaction")
    assert feedback.retract_matching(interaction, "U2", 1, "reaction")
    assert not feedback.retract_matching(interaction, "U2", 1, "reaction")  # already gone


def test_links_find_the_newest_answer_on_a_message(stores: Stores) -> None:
    first, second = recorded(stores), recorded(stores)
    links = stores.chat.links
    assert links.find_by_message("slack", "C1", "1.1") is None
    links.attach_message(first, "C1", "1.1")
    links.attach_message(second, "C1", "1.1")
    assert links.find_by_message("slack", "C1", "1.1") == second
    assert links.find_by_message("teams", "C1", "1.1") is None


def test_recall_and_asked_by(stores: Stores) -> None:
    interaction = recorded(stores, user="U7")
    found = stores.chat.links.recall(interaction)
    assert found is not None
    assert (found.text, found.status, found.user) == ("Reset it in the portal [1].", "answered",
                                                      "U7")
    assert [(c.n, c.doc_id) for c in found.citations] == [(1, "mfa")]
    assert stores.chat.links.recall(999) is None
    assert [a.question for a in stores.chat.links.asked_by("slack", "U7")] == [
        "How do I reset MFA?"]
    assert stores.chat.links.asked_by("slack", "U8") == []


def test_dedupe_claims_once(stores: Stores) -> None:
    assert stores.chat.dedupe.claim("slack:Ev1", 60)
    assert not stores.chat.dedupe.claim("slack:Ev1", 60)
    assert stores.chat.dedupe.claim("slack:Ev2", 60)


def test_history_keeps_the_newest_turns_oldest_first(stores: Stores) -> None:
    history = stores.chat.history
    for n in range(5):
        history.append("k", [("user", f"t{n}")], 3)
    assert history.recent("k", 10) == [("user", "t2"), ("user", "t3"), ("user", "t4")]
    assert history.recent("k", 2) == [("user", "t3"), ("user", "t4")]
    assert history.recent("k", 0) == [] and history.recent("other", 5) == []


def test_the_quota_counts_per_person_within_the_window(stores: Stores) -> None:
    quota = stores.chat.quota
    assert [quota.allow("U1", 2, 60) for _ in range(3)] == [True, True, False]
    assert quota.allow("U2", 2, 60)  # another person has their own count
    assert quota.allow("U3", 1, 0.2)
    time.sleep(0.3)  # the window slides: an old question no longer counts
    assert quota.allow("U3", 1, 0.2)


def test_wildcards_in_a_person_id_count_only_that_person(stores: Stores) -> None:
    quota = stores.chat.quota
    assert quota.allow("UX1", 1, 60)
    assert quota.allow("U_1", 1, 60)  # as a LIKE pattern, "_" would match UX1's X
    assert quota.allow("U%", 1, 60)  # ... and "%" every key of a person starting with U
    assert quota.allow("U\\", 1, 60)  # the escape character itself
    assert [quota.allow(who, 1, 60) for who in ("UX1", "U_1", "U%", "U\\")] == [False] * 4
