"""The one ask flow and the one vote flow: admit → policy → history → ask → deliver → link →
remember, and look up → dedupe → vote → escalate → acknowledge. Platforms only translate."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from bot.chat.access import PUBLIC, AccessResolver, Audience, Visibility, visible_to
from bot.chat.addressing import reads_like_question
from bot.chat.comments import CommentKey, PendingComments
from bot.chat.deflection import Outcomes
from bot.chat.files import FileReader, Read
from bot.chat.message import VIA_BUTTON, ChatMessage, Kind, Vote
from bot.chat.policy import ChannelPolicy, PolicyDefaults, PolicyStore, Respond, resolve
from bot.chat.service import ChatService
from bot.chat.surface import Delivery, Surface
from bot.faults import failure_sentence
from rag import messages
from rag.logcontext import correlated, current_correlation_id
from rag.patience import NO_RETRY, Retrying
from rag.types import UNANSWERED, Answer, AnswerStatus, AskContext, Platform, Question, Turn

log = logging.getLogger(__name__)
ADDRESSED = frozenset({Kind.MENTION, Kind.DIRECT, Kind.COMMAND})


class Policies:
    """Finds the policy for a conversation on every message, so an edit applies at once."""

    def __init__(self, store: PolicyStore | None, defaults: PolicyDefaults,
                 retrying: Retrying = NO_RETRY) -> None:
        self._store = store
        self._defaults = defaults
        self._retrying = retrying

    async def find(self, platform: Platform, channel: str, *, direct: bool,
                   team: str = "") -> ChannelPolicy:
        if self._store is None:
            return self._defaults.direct(platform) if direct else \
                self._defaults.channel(platform)
        return await self._retrying.blocking(
            "reading the channel policy", resolve, self._store, self._defaults,
            platform, channel, direct=direct, team=team)

    async def for_message(self, msg: ChatMessage) -> ChannelPolicy:
        return await self.find(msg.platform, msg.channel, direct=msg.kind is Kind.DIRECT,
                               team=msg.team)


class VotedDown(Protocol):
    """Who hears of a 👎: the owners of the documents the answer cited (bot/answers/owners)."""

    async def voted_down(self, doc_ids: Sequence[str]) -> int: ...


class ChatFlow:
    def __init__(self, service: ChatService, policies: Policies, access: AccessResolver,
                 comments: PendingComments, outcomes: Outcomes | None = None,
                 files: FileReader | None = None, owners: VotedDown | None = None) -> None:
        self.service = service
        self.files = files  # None: attached files are not read (and the answer says so)
        self.policies = policies
        self._access = access
        self._comments = comments
        self.outcomes = outcomes or Outcomes(None)  # help questions' outcomes (deflection)
        self._owners = owners

    # --- questions ----------------------------------------------------------------------

    async def on_message(self, msg: ChatMessage, surface: Surface) -> None:
        """Answer `msg` if it is for Sift; every failure ends in a sentence, never silence."""
        async with guarded(surface, f"{msg.platform} message {msg.event_key}",
                           tell=msg.kind in ADDRESSED) as guard:
            policy = await self.policies.for_message(msg)
            await self.outcomes.replied(msg)
            if await self._take_comment(msg, surface):
                return
            history = await self._addressed(msg, surface, policy)
            if history is None or await self.outcomes.hold_out(msg, policy):
                return
            guard.tell = True  # a message for Sift: its asker hears of a failure
            await self._answer(msg, surface, policy, history)

    async def _addressed(self, msg: ChatMessage, surface: Surface,
                         policy: ChannelPolicy) -> tuple[Turn, ...] | None:
        """The thread's earlier turns when `msg` is for Sift; None when it is not."""
        if not policy.enabled:
            if msg.kind in (Kind.MENTION, Kind.COMMAND):
                await surface.notice(messages.CHANNEL_OFF)
            return None
        if msg.kind in (Kind.CHANNEL, Kind.THREAD_REPLY):
            wanted = policy.respond is Respond.QUESTIONS if msg.kind is Kind.CHANNEL \
                else policy.follow_ups
            if not wanted or msg.mentions_others or not reads_like_question(msg.text):
                return None
        if not msg.thread:
            return ()
        try:
            thread = await surface.thread()
        except Exception as exc:
            if msg.kind not in ADDRESSED:
                raise
            # For a question that is surely ours, history is a nicety: answer it on its own.
            log.warning("no thread history for %s: %s", msg.event_key, exc)
            return ()
        if msg.kind is Kind.THREAD_REPLY and not (thread and thread.answered_by_me):
            return None  # people talking in a thread Sift is not part of
        return thread.turns if thread else ()

    async def _answer(self, msg: ChatMessage, surface: Surface, policy: ChannelPolicy,
                      history: tuple[Turn, ...]) -> None:
        gate = await self.service.admit(msg.event_key, msg.user,
                                        msg.text or " ".join(f.name for f in msg.files))
        if not gate.admitted:
            if gate.reply:
                await surface.notice(gate.reply)
            return
        read = await self._read(msg)
        text = read.question(msg.text)
        if not text:  # only files, none of them readable: their sentences are the reply
            await surface.notice(" ".join(read.notes))
            return
        if msg.conversation:
            history = await self.service.history(msg.conversation)
        # A /sift answer, or any answer in a private-answers channel, shows to the asker alone.
        alone = msg.kind is Kind.COMMAND or (policy.private_answers and msg.kind is not Kind.DIRECT)
        shown = Visibility.PRIVATE if msg.private or alone else Visibility.CHANNEL
        groups = await self._access.groups_for(msg.asker, Audience(
            shown, policy.audience, msg.channel if shown is Visibility.CHANNEL else ""))
        question = Question(text, _context(msg, policy, groups), history, msg.mode,
                            correlation_id=current_correlation_id(), images=read.images,
                            attached=read.plain)
        delivery = Delivery(private=alone, help=bool(policy.escalate_to))
        async with surface.working(delivery) as preview:
            answer = read.told(await self.service.ask(question, preview))
            if _stay_silent(msg, policy, answer):
                log.info("no confident answer in auto-answer channel %s; staying silent",
                         msg.channel)
                return
            ref = await surface.deliver(answer, _sharing(delivery, msg, policy, answer))
        await self._keep(msg, answer, ref)
        await self.outcomes.answered(msg, answer)

    async def _read(self, msg: ChatMessage) -> Read:
        """What the message's files say; without a reader they are not read, and the answer
        says so rather than ignoring them."""
        if not msg.files:
            return Read()
        if self.files is None:
            return Read(notes=(messages.FILES_OFF,))
        return await self.files.read(msg.files, vision=self.service.reads_images())

    async def context_for(self, msg: ChatMessage) -> AskContext | str:
        """A tool's call that is no question (a search, a document read) admitted as a
        question is (dedupe, size, the asker's quota), under the policy of `msg`'s
        conversation and the asker's groups as in a DM; the refusal's sentence otherwise."""
        policy = await self.policies.for_message(msg)
        if not policy.enabled:
            return messages.CHANNEL_OFF
        gate = await self.service.admit(msg.event_key, msg.user, msg.text)
        if not gate.admitted:
            return gate.reply or messages.EMPTY_QUESTION
        groups = await self._access.groups_for(msg.asker, Audience(msg.visibility))
        return _context(msg, policy, groups)

    async def _keep(self, msg: ChatMessage, answer: Answer, ref: str) -> None:
        """Link the reply for votes and keep the turn for follow-ups; the person already has
        the answer, so a failure here is only logged."""
        try:
            if ref:
                await self.service.link(answer, msg.channel, ref)
            if msg.conversation and answer.status is not AnswerStatus.ERROR:
                await self.service.remember(msg.conversation, msg.text, answer)
        except Exception:
            log.exception("could not store the answer to %s", msg.event_key)

    async def _take_comment(self, msg: ChatMessage, surface: Surface) -> bool:
        """The reply to a "what was missing?" prompt is stored as a comment, not answered."""
        if msg.kind not in (Kind.DIRECT, Kind.THREAD_REPLY):
            return False  # an @mention is a question even while a comment is awaited
        key = CommentKey(msg.channel, msg.thread, msg.user)
        if await self._comments.peek(key) is None:
            return False
        gate = await self.service.admit(msg.event_key, msg.user, msg.text)
        interaction = await self._comments.take(key) if gate.admitted else None
        if interaction is not None:
            await self.service.comment(interaction, msg.user, msg.text)
            await surface.notice(messages.COMMENT_THANKS)
        elif gate.reply:
            await surface.notice(gate.reply)
        return True

    # --- votes and calls for help ---------------------------------------------------------

    async def on_vote(self, vote: Vote, surface: Surface) -> None:
        async with guarded(surface, f"vote on {vote.message_ref}"):
            await self._vote(vote, surface)

    async def _vote(self, vote: Vote, surface: Surface) -> None:
        interaction = await self.service.interaction_for(vote.platform, vote.channel,
                                                         vote.message_ref)
        if interaction is None:
            log.info("vote on %s, which is not a recorded answer", vote.message_ref)
            if vote.via == VIA_BUTTON:
                await surface.notice(messages.UNKNOWN_ANSWER_FEEDBACK)
            return
        # Claimed only on answers, so reactions elsewhere leave no trace in the store.
        if vote.event_key and not await self.service.claim(vote.event_key):
            return
        if not vote.added:
            # Only the vote this reaction cast: not a later click or the opposite reaction.
            await self.service.retract_matching(interaction, vote.user, vote.vote, vote.via)
            return
        await self.service.vote(interaction, vote.user, vote.vote, vote.via, vote.comment)
        await self.outcomes.voted(interaction, vote.user, vote.vote)
        if vote.vote < 0:
            await self._escalate(vote.platform, vote.channel, surface, team=vote.team)
            await self._tell_owners(interaction)
        asked_in = await surface.voted(vote, interaction)
        if asked_in is not None:
            await self._comments.expect(CommentKey(vote.channel, asked_in, vote.user),
                                        interaction)

    async def _tell_owners(self, interaction_id: int) -> None:
        """The vote is stored whatever happens here: an owner not told is only logged."""
        if self._owners is None:
            return
        try:
            answer = await self.service.recall(interaction_id)
            if answer is not None and answer.citations:
                await self._owners.voted_down([c.doc_id for c in answer.citations])
        except Exception:
            log.exception("could not tell the owners of answer %d's documents of a 👎",
                          interaction_id)

    async def on_help(self, platform: Platform, channel: str, surface: Surface, *,
                      team: str = "", thread: str = "") -> None:
        """"Still need help?": call the people the channel's policy names."""
        async with guarded(surface, f"help request in {channel}"):
            await self.outcomes.helped(platform, channel, thread)
            if not await self._escalate(platform, channel, surface, team=team):
                await surface.notice(messages.NOBODY_TO_CALL)

    async def on_share(self, interaction_id: int, user: str, platform: Platform, channel: str,
                       surface: Surface) -> None:
        """"Share to channel" under a private answer: post it for everyone in `channel`, when
        its asker clicked and every document it was written from is visible there. Checked
        again at the click: the button was only offered, and a click can be forged (another
        answer's id, another channel, another person)."""
        async with guarded(surface, f"sharing answer {interaction_id}"):
            answer = await self.service.recall(interaction_id)
            if answer is None or answer.question.context.user != user or \
                    not await self.shareable(answer, platform, channel):
                await surface.notice(messages.SHARE_UNAVAILABLE)
                return
            ref = await surface.deliver(answer, Delivery())
            await self.service.link(answer, answer.question.context.channel, ref)

    async def shareable(self, answer: Answer, platform: Platform, channel: str) -> bool:
        policy = await self.policies.find(platform, channel, direct=False)
        return answer.status in (AnswerStatus.ANSWERED, AnswerStatus.DEGRADED) and \
            may_share(policy, answer)

    async def _escalate(self, platform: Platform, channel: str, surface: Surface, *,
                        team: str = "") -> bool:
        policy = await self.policies.find(platform, channel, direct=False, team=team)
        if not policy.escalate_to:
            return False
        await surface.escalate(policy.escalate_to)
        return True


def _context(msg: ChatMessage, policy: ChannelPolicy, groups: tuple[str, ...]) -> AskContext:
    return AskContext(platform=msg.platform, workspace=msg.workspace, channel=msg.channel,
                      thread=msg.reply_thread, user=msg.user, access_groups=groups,
                      sources=policy.source_names, tags=policy.tags, doc_types=policy.doc_types,
                      policy=policy.key)


def _stay_silent(msg: ChatMessage, policy: ChannelPolicy, answer: Answer) -> bool:
    """An auto-answer channel that asked for confidence hears nothing rather than "no"."""
    return (msg.kind is Kind.CHANNEL and policy.only_when_confident
            and answer.status in UNANSWERED)


def _sharing(delivery: Delivery, msg: ChatMessage, policy: ChannelPolicy,
             answer: Answer) -> Delivery:
    """A private answer in a channel may be shared there when every source it was written
    from is visible to everyone in it."""
    if not delivery.private or answer.status not in (
            AnswerStatus.ANSWERED, AnswerStatus.DEGRADED):
        return delivery
    if may_share(policy, answer):
        return replace(delivery, share=True)
    return replace(delivery, share_blocked=messages.SHARE_BLOCKED)


def may_share(policy: ChannelPolicy, answer: Answer) -> bool:
    """Every document the answer was written from is visible to everyone the channel's policy
    says is there: not only the cited ones, since the model read every selected excerpt and
    may repeat one without citing it. A citation of a chunk the answer does not hold is
    unknown, so nobody's."""
    channel_groups = (PUBLIC, *policy.audience)
    used = [c.chunk.access for c in answer.candidates if c.selected or c.cited]
    known = {c.chunk.chunk_id for c in answer.candidates}
    return all(c.chunk_id in known for c in answer.citations) and \
        all(visible_to(access, channel_groups) for access in used)


@dataclass
class Guard:
    cid: str
    tell: bool  # whether the person hears of a failure (an unaddressed message: no)


@contextlib.asynccontextmanager
async def guarded(surface: Surface, what: str, *, tell: bool = True) -> AsyncIterator[Guard]:
    """The one "correlate, try, log, tell the person" of every chat entry point: the work runs
    under a fresh correlation id; a failure is logged with it, and the person gets one
    sentence carrying it as a reference (what failed, when that can be named: a full disk, a
    database away), never silence and never a traceback."""
    with correlated() as cid:
        guard = Guard(cid, tell)
        try:
            yield guard
        except Exception as exc:
            log.exception("%s failed", what)
            if guard.tell:
                await _tell_failure(surface, cid, failure_sentence(exc))


async def _tell_failure(surface: Surface, cid: str,
                        message: str = messages.INTERNAL_ERROR) -> None:
    try:
        await surface.failure(cid, message)
    except Exception:
        log.exception("could not send the error message to the asker either")
