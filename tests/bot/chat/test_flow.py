"""The one chat flow against an in-memory surface: what any platform gets, without a platform."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.chat.access import Asker, Audience, Visibility
from bot.chat.comments import PendingComments
from bot.chat.flow import ChatFlow
from bot.chat.message import VIA_BUTTON, VIA_REACTION, ChatMessage, Kind, Thread, Vote
from bot.chat.policy import ChannelPolicy, Respond
from bot.chat.service import ChatLimits, ChatService
from bot.chat.surface import Delivery
from bot.slack.spec import PLATFORM as SLACK_PLATFORM
from rag import messages
from rag.ports import TextSink
from rag.types import Answer, AnswerStatus, Turn
from storage.db import Database
from storage.expiring import ExpiringStore
from tests.fakes.chat import MemoryPolicies, make_flow
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import make_pipeline
from tests.rag.corpus import CHUNKS

STAGING = "How do I rotate the staging database credentials?"


@dataclass
class MemorySurface:
    """Records what the flow asked the platform to do."""

    thread_view: Thread | None = None
    thread_fails: bool = False
    delivered: list[tuple[Answer, Delivery]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    failure_messages: list[str] = field(default_factory=list)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    comment_thread: str | None = None
    working_with: list[Delivery] = field(default_factory=list)

    async def thread(self) -> Thread | None:
        if self.thread_fails:
            raise RuntimeError("no history scope")
        return self.thread_view

    @contextlib.asynccontextmanager
    async def working(self, delivery: Delivery) -> AsyncIterator[TextSink | None]:
        self.working_with.append(delivery)
        yield None

    async def deliver(self, answer: Answer, delivery: Delivery) -> str:
        self.delivered.append((answer, delivery))
        return f"msg-{len(self.delivered)}"

    async def notice(self, text: str) -> None:
        self.notices.append(text)

    async def failure(self, correlation_id: str, message: str = messages.INTERNAL_ERROR
                      ) -> None:
        self.failures.append(correlation_id)
        self.failure_messages.append(message)

    async def escalate(self, people: Sequence[str]) -> None:
        self.calls.append(tuple(people))

    async def voted(self, vote: Vote, interaction_id: int) -> str | None:
        return self.comment_thread if vote.vote < 0 else None


class RecordingAccess:
    def __init__(self) -> None:
        self.asked: list[tuple[Asker, Audience]] = []

    async def groups_for(self, asker: Asker, audience: Audience) -> tuple[str, ...]:
        self.asked.append((asker, audience))
        return ("public", "hr") if audience.visibility is Visibility.PRIVATE else ("public",)


@pytest.fixture(scope="module")
async def index(embedder: Any) -> MemoryIndex:
    memory = MemoryIndex()
    await memory.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    return memory


@dataclass
class Setup:
    flow: ChatFlow
    stores: MemoryChatStores
    access: RecordingAccess


@pytest.fixture
def setup(index: MemoryIndex, embedder: Any) -> Setup:
    stores = MemoryChatStores()
    pipeline = make_pipeline(index, embedder, None, recorder=stores.interactions,
                             syncs=stores.syncs)
    service = ChatService(pipeline, stores.chat_stores(), ChatLimits(quota_per_minute=100))
    access = RecordingAccess()
    policies = MemoryPolicies(
        ChannelPolicy("slack", "CHELP", respond=Respond.QUESTIONS),
        ChannelPolicy("slack", "CQUIET", respond=Respond.QUESTIONS, only_when_confident=True),
        ChannelPolicy("slack", "CDESK", escalate_to=("U0ONCALL1",)),
        ChannelPolicy("slack", "COFF", enabled=False),
        ChannelPolicy("slack", "CPRIV", private_answers=True, audience=("eng",)))
    return Setup(make_flow(service, policies=policies, access=access), stores, access)


def msg(text: str, *, kind: Kind = Kind.MENTION, channel: str = "CGEN", thread: str = "",
        n: int = 1, **kw: Any) -> ChatMessage:
    return ChatMessage(SLACK_PLATFORM, kind, f"ev-{channel}-{n}-{text}", "T1", channel, thread,
                       "U1", text, ts=f"{n}.0", reply_thread=thread or f"{n}.0", **kw)


async def test_a_mention_is_answered_linked_and_recorded_with_its_policy(setup: Setup) -> None:
    surface = MemorySurface()
    await setup.flow.on_message(msg(STAGING), surface)
    [(answer, delivery)] = surface.delivered
    assert answer.status is AnswerStatus.ANSWERED and not delivery.private
    row = setup.stores.interactions.rows[1]
    assert row.message_ref == "msg-1" and row.channel == "CGEN"
    assert answer.question.context.policy == "slack:*"


async def test_no_answer_while_the_first_sync_runs_says_the_index_is_still_being_read(
        setup: Setup) -> None:
    question = "What is the office wifi password in the Lisbon branch?"  # not in the corpus
    surface = MemorySurface()
    await setup.flow.on_message(msg(question, n=1), surface)
    setup.stores.syncs.first_running.append("wiki")
    await setup.flow.on_message(msg(question, n=2), surface)
    setup.stores.syncs.first_running.clear()
    await setup.flow.on_message(msg(STAGING, n=3), surface)
    [(before, _), (during, _), (answered, _)] = surface.delivered
    assert (before.status, before.text) == (AnswerStatus.NO_ANSWER, messages.NO_ANSWER)
    assert (during.status, during.text) == (AnswerStatus.NOT_INDEXED, messages.NOT_INDEXED_YET)
    assert answered.status is AnswerStatus.ANSWERED and answered.text != messages.NOT_INDEXED_YET
    # Recorded as what was said, so the console does not list it among the gaps.
    recorded = [row.answer for row in setup.stores.interactions.rows.values()]
    assert [(a.status, a.text) for a in recorded[:2]] == [
        (AnswerStatus.NO_ANSWER, messages.NO_ANSWER),
        (AnswerStatus.NOT_INDEXED, messages.NOT_INDEXED_YET)]


@pytest.mark.parametrize(("text", "answered"), [
    (STAGING, True), ("thanks!", False), ("ok, will do", False),
    ("<@U9> can you look?", False)])
async def test_auto_answer_takes_questions_only(setup: Setup, text: str, answered: bool) -> None:
    surface = MemorySurface()
    await setup.flow.on_message(msg(text, kind=Kind.CHANNEL, channel="CHELP",
                                    mentions_others=text.startswith("<@")), surface)
    assert bool(surface.delivered) is answered


async def test_channels_without_auto_answer_ignore_unmentioned_questions(setup: Setup) -> None:
    surface = MemorySurface()
    await setup.flow.on_message(msg(STAGING, kind=Kind.CHANNEL), surface)
    assert surface.delivered == [] and setup.stores.interactions.rows == {}


async def test_a_failing_sync_state_read_leaves_the_plain_no_answer(
        setup: Setup, caplog: pytest.LogCaptureFixture) -> None:
    setup.stores.syncs.down = True
    surface = MemorySurface()
    await setup.flow.on_message(msg("Who won the chess tournament in 1972?"), surface)
    [(answer, _)] = surface.delivered
    assert (answer.status, answer.text) == (AnswerStatus.NO_ANSWER, messages.NO_ANSWER)
    assert "could not tell whether a first sync is running" in caplog.text
    assert "refused the connection" in caplog.text  # the cause, in the log only
    [row] = setup.stores.interactions.rows.values()
    assert row.answer.status is AnswerStatus.NO_ANSWER


@pytest.mark.parametrize(("first_sync", "status"), [
    (False, AnswerStatus.NO_ANSWER), (True, AnswerStatus.NOT_INDEXED)])
async def test_only_when_confident_is_silent_but_records(setup: Setup, first_sync: bool,
                                                         status: AnswerStatus) -> None:
    if first_sync:  # "still reading" is no more confident than "not found"
        setup.stores.syncs.first_running.append("wiki")
    surface = MemorySurface()
    await setup.flow.on_message(msg("Who won the chess tournament in 1972?", kind=Kind.CHANNEL,
                                    channel="CQUIET"), surface)
    assert surface.delivered == [] and surface.notices == []
    [row] = setup.stores.interactions.rows.values()
    assert row.answer.status is status


async def test_a_switched_off_channel_says_so_to_a_mention(setup: Setup) -> None:
    surface = MemorySurface()
    await setup.flow.on_message(msg(STAGING, channel="COFF"), surface)
    assert surface.notices == [messages.CHANNEL_OFF] and surface.delivered == []


async def test_thread_reply_needs_sift_in_the_thread(setup: Setup) -> None:
    theirs = MemorySurface(thread_view=Thread(False))
    await setup.flow.on_message(msg("and for production?", kind=Kind.THREAD_REPLY,
                                    thread="1.0", n=2), theirs)
    assert theirs.delivered == []
    ours = MemorySurface(thread_view=Thread(True, (Turn("user", STAGING),)))
    await setup.flow.on_message(msg("and for production?", kind=Kind.THREAD_REPLY,
                                    thread="1.0", n=3), ours)
    [(answer, _)] = ours.delivered
    assert answer.question.history == (Turn("user", STAGING),)


async def test_a_mention_in_a_thread_is_answered_even_without_history(setup: Setup) -> None:
    surface = MemorySurface(thread_fails=True)
    await setup.flow.on_message(msg(STAGING, thread="1.0"), surface)
    assert len(surface.delivered) == 1 and surface.failures == []


async def test_private_answers_ask_with_the_askers_access_and_offer_sharing(
        setup: Setup) -> None:
    surface = MemorySurface()
    await setup.flow.on_message(msg(STAGING, channel="CPRIV"), surface)
    [(_, delivery)] = surface.delivered
    assert delivery.private and delivery.share
    [(_, audience)] = setup.access.asked
    assert audience == Audience(Visibility.PRIVATE, ("eng",))


async def test_a_direct_message_is_private_but_not_ephemeral(setup: Setup) -> None:
    surface = MemorySurface()
    await setup.flow.on_message(msg(STAGING, kind=Kind.DIRECT, channel="D1",
                                    conversation="slack:T1:D1"), surface)
    [(_, delivery)] = surface.delivered
    assert not delivery.private
    assert setup.access.asked[0][1].visibility is Visibility.PRIVATE
    assert setup.stores.history.turns["slack:T1:D1"][0] == ("user", STAGING)


async def test_a_down_vote_calls_the_channels_people_and_awaits_a_comment(
        setup: Setup) -> None:
    asked = MemorySurface()
    await setup.flow.on_message(msg(STAGING, channel="CDESK"), asked)
    assert asked.delivered[0][1].help
    voter = MemorySurface(comment_thread="1.0")
    await setup.flow.on_vote(Vote(SLACK_PLATFORM, "CDESK", "msg-1", "U2", -1, VIA_BUTTON),
                             voter)
    assert voter.calls == [("U0ONCALL1",)]
    assert setup.stores.feedback.votes[(1, "U2")].vote == -1
    reply = MemorySurface()
    comment = ChatMessage(SLACK_PLATFORM, Kind.THREAD_REPLY, "ev-comment", "T1", "CDESK", "1.0",
                          "U2", "it should name the approver", ts="9.0")
    await setup.flow.on_message(comment, reply)
    assert setup.stores.feedback.votes[(1, "U2")].comment == "it should name the approver"
    assert reply.notices == [messages.COMMENT_THANKS] and reply.delivered == []


async def test_the_comment_may_reach_another_replica(index: MemoryIndex, embedder: Any,
                                                   tmp_path: Path) -> None:
    """The invitation lives in the database: the reply counts whichever process receives it."""
    db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    db.upgrade()
    stores = MemoryChatStores()
    service = ChatService(make_pipeline(index, embedder, None, recorder=stores.interactions),
                          stores.chat_stores(), ChatLimits(quota_per_minute=100))
    first, second = (make_flow(service, comments=PendingComments(ExpiringStore(db)))
                     for _ in range(2))
    await first.on_message(msg(STAGING), MemorySurface())
    await first.on_vote(Vote(SLACK_PLATFORM, "CGEN", "msg-1", "U2", -1, VIA_BUTTON),
                        MemorySurface(comment_thread="1.0"))
    reply = MemorySurface()
    await second.on_message(ChatMessage(SLACK_PLATFORM, Kind.THREAD_REPLY, "ev-c", "T1", "CGEN",
                                        "1.0", "U2", "name the approver", ts="9.0"), reply)
    db.dispose()
    assert stores.feedback.votes[(1, "U2")].comment == "name the approver"
    assert reply.notices == [messages.COMMENT_THANKS] and reply.delivered == []


async def test_a_redelivered_reaction_counts_once_and_removal_takes_only_its_own(
        setup: Setup) -> None:
    await setup.flow.on_message(msg(STAGING), MemorySurface())
    up = Vote(SLACK_PLATFORM, "CGEN", "msg-1", "U2", 1, VIA_REACTION, event_key="ev-r1")
    for _ in range(2):
        await setup.flow.on_vote(up, MemorySurface())
    assert len(setup.stores.feedback.votes) == 1
    await setup.flow.on_vote(Vote(SLACK_PLATFORM, "CGEN", "msg-1", "U2", -1, VIA_BUTTON),
                             MemorySurface())
    await setup.flow.on_vote(Vote(SLACK_PLATFORM, "CGEN", "msg-1", "U2", 1, VIA_REACTION,
                                  added=False, event_key="ev-r2"), MemorySurface())
    assert setup.stores.feedback.votes[(1, "U2")].vote == -1  # the click stays


async def test_a_vote_on_an_unknown_message_is_answered_only_for_buttons(setup: Setup) -> None:
    button, reaction = MemorySurface(), MemorySurface()
    await setup.flow.on_vote(Vote(SLACK_PLATFORM, "CGEN", "nope", "U2", 1, VIA_BUTTON), button)
    await setup.flow.on_vote(Vote(SLACK_PLATFORM, "CGEN", "nope", "U2", 1, VIA_REACTION,
                                  event_key="ev-x"), reaction)
    assert button.notices == [messages.UNKNOWN_ANSWER_FEEDBACK] and reaction.notices == []


async def test_a_failing_surface_ends_in_a_failure_notice(setup: Setup) -> None:
    class Broken(MemorySurface):
        async def deliver(self, answer: Answer, delivery: Delivery) -> str:
            raise RuntimeError("platform down")

    surface = Broken()
    await setup.flow.on_message(msg(STAGING), surface)
    assert len(surface.failures) == 1 and len(surface.failures[0]) == 8
