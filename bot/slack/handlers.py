"""Bolt listeners: parse the payload, ack, then ask or vote through ChatService and post."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError

from bot.render.slack import render_answer, render_error, render_notice, streamable
from bot.service import ChatService
from bot.slack.events import (
    FeedbackClick,
    Incoming,
    Kind,
    Me,
    Payload,
    Reaction,
    ThreadMessage,
    answered_by_me,
    looks_addressed,
    parse_feedback,
    parse_mention,
    parse_message,
    parse_reaction,
    thread_turns,
)
from bot.slack.live import APPEND_EVERY_S, LiveAnswer, StreamTarget
from bot.slack.outbox import SlackOutbox
from bot.slack.state import Background, CommentKey, PendingComments
from rag import messages
from rag.logcontext import (
    bind_correlation_id,
    current_correlation_id,
    new_correlation_id,
    reset_correlation_id,
)
from rag.types import Answer, AskContext, Platform, Question, Turn

log = logging.getLogger(__name__)
PLATFORM = Platform.SLACK.value
# How a vote arrived (storage's feedback channel): a reaction, or the feedback buttons.
VIA_REACTION, VIA_BUTTON = "reaction", "button"


@dataclass(frozen=True)
class SlackOptions:
    streaming: bool = False
    follow_ups_without_mention: bool = True
    ask_why_on_downvote: bool = True
    assistant_status: bool = False  # set_status in DM threads instead of the 👀 reaction
    history_turns: int = 10
    append_every_s: float = APPEND_EVERY_S  # live answers: at most one appendStream this often


def _me(context: AsyncBoltContext) -> Me:
    return Me(context.bot_user_id or "", context.bot_id or "")


class SlackHandlers:
    """One instance per adapter; listeners return at once, the work runs in `background`."""

    def __init__(self, service: ChatService, outbox: SlackOutbox, options: SlackOptions,
                 background: Background, comments: PendingComments) -> None:
        self._service = service
        self._out = outbox
        self._options = options
        self._background = background
        self._comments = comments

    # --- listeners (bolt injects arguments by name) -----------------------------------------

    async def on_mention(self, body: Payload, context: AsyncBoltContext) -> None:
        me = _me(context)
        incoming = parse_mention(body, me)
        if incoming is not None:
            self._background.spawn(self._correlated(self._message, incoming, me))

    async def on_message(self, body: Payload, context: AsyncBoltContext) -> None:
        me = _me(context)
        incoming = parse_message(body, me)
        if incoming is not None:
            self._background.spawn(self._correlated(self._message, incoming, me))

    async def on_reaction_added(self, body: Payload, context: AsyncBoltContext) -> None:
        await self._on_reaction(body, context, added=True)

    async def on_reaction_removed(self, body: Payload, context: AsyncBoltContext) -> None:
        await self._on_reaction(body, context, added=False)

    async def _on_reaction(self, body: Payload, context: AsyncBoltContext, *, added: bool) -> None:
        reaction = parse_reaction(body, _me(context), added=added)
        if reaction is not None:
            self._background.spawn(self._correlated(self._reaction, reaction))

    async def on_feedback(self, ack: Callable[[], Awaitable[Any]], body: Payload) -> None:
        await ack()
        click = parse_feedback(body)
        if click is not None:
            self._background.spawn(self._correlated(self._feedback, click))

    async def _correlated(self, work: Callable[..., Awaitable[None]], *args: Any) -> None:
        token = bind_correlation_id(new_correlation_id())
        try:
            await work(*args)
        finally:
            reset_correlation_id(token)

    # --- questions --------------------------------------------------------------------------

    async def _message(self, incoming: Incoming, me: Me) -> None:
        addressed = incoming.kind is not Kind.THREAD_REPLY
        try:
            key = CommentKey(incoming.channel, incoming.thread_ts, incoming.user)
            # A comment is a plain reply or DM: an @mention is a question even then.
            if incoming.kind is not Kind.MENTION and self._comments.peek(key) is not None:
                addressed = True
                await self._take_comment(incoming, key)
                return
            if not addressed and not (self._options.follow_ups_without_mention
                                      and looks_addressed(incoming.text, me)):
                return
            thread = await self._thread(incoming, addressed)
            if not addressed and not answered_by_me(thread, me):
                return  # a conversation among people in a thread the bot is not part of
            addressed = True
            history = thread_turns(thread, incoming.ts, me, self._options.history_turns)
            await self._question(incoming, history)
        except Exception:
            log.exception("Slack message %s failed", incoming.event_id)
            if addressed:
                await self._report_failure(incoming)

    async def _thread(self, incoming: Incoming, addressed: bool) -> list[ThreadMessage]:
        """The thread so far. For a question that is surely ours, history is a nicety: without
        it (no channels:history scope, say) the question is answered on its own."""
        if not incoming.thread_ts:
            return []
        try:
            return await self._out.thread(incoming.channel, incoming.thread_ts)
        except SlackApiError as exc:
            if not addressed:
                raise
            log.warning("no thread history for %s: %s", incoming.event_id, exc)
            return []

    async def _question(self, incoming: Incoming, history: tuple[Turn, ...]) -> None:
        gate = await self._service.admit(f"slack:{incoming.event_id}", incoming.user,
                                         incoming.text)
        if not gate.admitted:
            if gate.reply:  # where the answer would have gone: a new mention has no thread_ts
                thread = incoming.answer_thread(threaded=self._options.streaming)
                await self._out.ephemeral(incoming.channel, incoming.user, thread,
                                          render_notice(gate.reply))
            return
        conversation = f"slack:{incoming.team}:{incoming.channel}"
        remembered = incoming.kind is Kind.DIRECT and not incoming.thread_ts
        if remembered:
            history = await self._service.history(conversation)
        async with self._working(incoming):
            live = self._live(incoming)
            answer = await self._service.ask(self._to_question(incoming, history),
                                             live.show if live else None)
            ts = await self._deliver(incoming, answer, live)
        await self._service.link(answer, incoming.channel, ts)
        if remembered:
            await self._service.remember(conversation, incoming.text, answer)

    def _to_question(self, incoming: Incoming, history: tuple[Turn, ...]) -> Question:
        context = AskContext(platform=Platform.SLACK, workspace=incoming.team,
                             channel=incoming.channel,
                             thread=incoming.answer_thread(threaded=self._options.streaming),
                             user=incoming.user)
        return Question(incoming.text, context, history,
                        correlation_id=current_correlation_id())

    @contextlib.asynccontextmanager
    async def _working(self, incoming: Incoming) -> AsyncIterator[None]:
        """👀 on the question while working, or the assistant thread's status line."""
        if self._options.assistant_status and incoming.kind is Kind.DIRECT and incoming.thread_ts:
            shown = await self._out.set_status(incoming.channel, incoming.thread_ts,
                                               messages.WORKING_STATUS)
            try:
                yield
            finally:
                if shown:  # Slack clears it on our reply; this covers the failures
                    await self._out.set_status(incoming.channel, incoming.thread_ts, "")
            return
        reacted = await self._out.react(incoming.channel, incoming.ts)
        try:
            yield
        finally:
            if reacted:
                await self._out.unreact(incoming.channel, incoming.ts)

    def _live(self, incoming: Incoming) -> LiveAnswer | None:
        """With streaming on, the answer shows in Slack while Claude writes it."""
        if not self._options.streaming:
            return None
        target = StreamTarget(incoming.channel, incoming.answer_thread(threaded=True),  # replies
                              incoming.team, incoming.user)
        return LiveAnswer(self._out, target, self._options.append_every_s)

    async def _deliver(self, incoming: Incoming, answer: Answer, live: LiveAnswer | None) -> str:
        """The live reply completed; an answer nobody saw being written is replayed through a
        stream, or posted."""
        shown = await live.finish(answer) if live else None
        if shown:
            return shown
        if live is not None and live.can_stream and streamable(answer):  # refused: not again
            try:
                return await live.replay(answer)
            except SlackApiError as exc:  # startStream refused: nothing is shown yet
                log.warning("streaming failed (%s); posting the answer at once", exc)
        thread = incoming.answer_thread(threaded=self._options.streaming)
        return await self._out.post(incoming.channel, thread, render_answer(answer))

    async def _report_failure(self, incoming: Incoming) -> None:
        notice = render_error(messages.INTERNAL_ERROR, current_correlation_id())
        try:
            thread = incoming.answer_thread(threaded=self._options.streaming)
            await self._out.post(incoming.channel, thread, notice)
        except Exception:
            log.exception("could not tell the asker about the failure either")

    # --- feedback -----------------------------------------------------------------------------

    async def _take_comment(self, incoming: Incoming, key: CommentKey) -> None:
        """The reply to a "what was missing?" prompt is stored as a comment, not answered."""
        gate = await self._service.admit(f"slack:{incoming.event_id}", incoming.user,
                                         incoming.text)
        interaction = self._comments.take(key) if gate.admitted else None
        if interaction is not None:
            await self._service.comment(interaction, incoming.user, incoming.text)
            await self._out.ephemeral(incoming.channel, incoming.user, incoming.thread_ts,
                                      render_notice(messages.COMMENT_THANKS))
        elif gate.reply:
            await self._out.ephemeral(incoming.channel, incoming.user, incoming.thread_ts,
                                      render_notice(gate.reply))

    async def _reaction(self, reaction: Reaction) -> None:
        try:
            interaction = await self._service.interaction_for(PLATFORM, reaction.channel,
                                                              reaction.message_ts)
            # Claimed only on answers, so reactions elsewhere leave no trace in the store.
            if interaction is None or not await self._service.claim(f"slack:{reaction.event_id}"):
                return  # a reaction on some other message, or a redelivery
            if not reaction.added:
                # Only the vote this reaction cast: not a later click or the opposite reaction.
                await self._service.retract_matching(interaction, reaction.user, reaction.vote,
                                                     VIA_REACTION)
                return
            await self._service.vote(interaction, reaction.user, reaction.vote, VIA_REACTION)
            if reaction.vote < 0 and self._options.ask_why_on_downvote:
                thread = await self._out.thread_of(reaction.channel, reaction.message_ts)
                await self._ask_why(reaction.channel, thread, reaction.user, interaction)
        except Exception:
            log.exception("reaction %s on %s failed", reaction.event_id, reaction.message_ts)
            await self._private_failure(reaction.channel, "", reaction.user)

    async def _feedback(self, click: FeedbackClick) -> None:
        try:
            interaction = await self._service.interaction_for(PLATFORM, click.channel,
                                                              click.message_ts)
            if interaction is None:
                await self._out.ephemeral(click.channel, click.user, click.thread_ts,
                                          render_notice(messages.UNKNOWN_ANSWER_FEEDBACK))
                return
            await self._service.vote(interaction, click.user, click.vote, VIA_BUTTON)
            if click.vote < 0 and self._options.ask_why_on_downvote:
                await self._ask_why(click.channel, click.thread_ts, click.user, interaction)
            else:
                await self._out.ephemeral(click.channel, click.user, click.thread_ts,
                                          render_notice(messages.FEEDBACK_THANKS))
        except Exception:
            log.exception("feedback click on %s failed", click.message_ts)
            await self._private_failure(click.channel, click.thread_ts, click.user)

    async def _ask_why(self, channel: str, thread_ts: str, user: str, interaction: int) -> None:
        self._comments.expect(CommentKey(channel, thread_ts, user), interaction)
        await self._out.ephemeral(channel, user, thread_ts,
                                  render_notice(messages.DOWNVOTE_PROMPT))

    async def _private_failure(self, channel: str, thread_ts: str, user: str) -> None:
        try:
            await self._out.ephemeral(channel, user, thread_ts,
                                      render_error(messages.INTERNAL_ERROR,
                                                   current_correlation_id()))
        except Exception:
            log.exception("could not tell %s about the failure either", user)
