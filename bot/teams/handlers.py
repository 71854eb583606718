"""Thin Teams handlers: parse the activity, call ChatService, render, send.

A message is acknowledged at once (HTTP 202) and answered in a proactive turn: Teams expects
the request to finish within about 15 seconds, and grading plus writing can take longer.
The proactive turn replies to the original message, so the reply lands in the same thread.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from microsoft_agents.activity import Activity, Channels, ResourceResponse
from microsoft_agents.hosting.core import ChannelAdapter, TurnContext, TurnState
from microsoft_agents.hosting.core.app import TypingIndicator, TypingOptions
from microsoft_agents.hosting.core.authorization import ClaimsIdentity

from bot.render.teams import TeamsReply, render_answer, render_notice
from bot.service import ChatService
from bot.teams.inbound import (
    ConversationKind,
    IncomingMessage,
    TeamsConversation,
    parse_feedback,
    parse_message,
    parse_reaction,
)
from bot.teams.outbound import STREAM_INTERVAL_S, AnswerStream, invoke_ok, to_activity
from bot.teams.tasks import BackgroundTasks
from rag import messages
from rag.logcontext import (
    bind_correlation_id,
    current_correlation_id,
    new_correlation_id,
    reset_correlation_id,
)
from rag.types import Answer, AnswerStatus, Platform, Question

log = logging.getLogger(__name__)

# How a vote arrived (storage's feedback channel): Teams' thumbs buttons, or a 👍 reaction.
VIA_BUTTON, VIA_REACTION = "button", "reaction"

Handler = Callable[[Any, TurnContext, TurnState], Awaitable[None]]


@dataclass(frozen=True)
class TeamsOptions:
    streaming: bool = True
    citation_entities: bool = True
    typing_interval_s: float = 3.0
    stream_interval_s: float = STREAM_INTERVAL_S  # least time between streaming updates


def on_teams(activity: Activity) -> bool:
    return activity.channel_id is not None and activity.channel_id.channel == Channels.ms_teams


def continuation_of(activity: Activity) -> Activity:
    """A proactive turn that replies to `activity` exactly as the inbound turn would have."""
    continuation = activity.get_conversation_reference().get_continuation_activity()
    continuation.id = activity.id
    return continuation


async def send(turn: TurnContext, reply: TeamsReply) -> ResourceResponse | None:
    return await turn.send_activity(to_activity(reply))


async def tell_failure(turn: TurnContext, correlation_id: str) -> None:
    """The person hears that it failed and gets a reference; a failure to say so is logged."""
    try:
        await send(turn, render_notice(messages.with_reference(messages.INTERNAL_ERROR,
                                                               correlation_id)))
    except Exception:
        log.exception("could not send the error message to Teams")


def guarded(handler: Handler) -> Handler:
    """One correlation id per activity; an unexpected failure ends in a message, not silence."""
    @functools.wraps(handler)
    async def run(self: Any, turn: TurnContext, state: TurnState) -> None:
        cid = new_correlation_id()
        token = bind_correlation_id(cid)
        try:
            await handler(self, turn, state)
        except Exception:
            log.exception("Teams %s activity failed", turn.activity.type)
            await tell_failure(turn, cid)
        finally:
            reset_correlation_id(token)

    return run


class TeamsHandlers:
    def __init__(self, service: ChatService, adapter: ChannelAdapter,
                 options: TeamsOptions, tasks: BackgroundTasks) -> None:
        self._service = service
        self._adapter = adapter
        self._options = options
        self._tasks = tasks

    # --- Questions ------------------------------------------------------------------------

    @guarded
    async def on_message(self, turn: TurnContext, state: TurnState) -> None:
        msg = parse_message(turn.activity)
        if msg is None:
            log.debug("channel message %s does not mention Sift", turn.activity.id)
            return
        gate = await self._service.admit(msg.dedupe_key, msg.user, msg.text)
        if not gate.admitted:
            if gate.reply:
                await send(turn, render_notice(gate.reply))
            return
        identity = turn.identity or ClaimsIdentity({})
        scope = turn.turn_state.get(self._adapter.OAUTH_SCOPE_KEY)
        audience = scope if isinstance(scope, str) else None
        self._tasks.start(self._answer_later(identity, audience, continuation_of(turn.activity),
                                             msg, current_correlation_id()))

    async def _answer_later(self, identity: ClaimsIdentity, audience: str | None,
                            continuation: Activity, msg: IncomingMessage, cid: str) -> None:
        token = bind_correlation_id(cid)
        try:
            await self._adapter.continue_conversation_with_claims(
                identity, continuation, functools.partial(self._answer, msg=msg, cid=cid),
                audience)
        except Exception:
            log.exception("could not deliver the answer to Teams message %s", msg.activity_id)
        finally:
            reset_correlation_id(token)

    def _stream(self, turn: TurnContext, msg: IncomingMessage) -> AnswerStream | None:
        # Teams streams only in one-to-one chats.
        if (self._options.streaming and on_teams(turn.activity)
                and msg.conversation.kind is ConversationKind.PERSONAL):
            return AnswerStream(turn, self._options.stream_interval_s)
        return None

    async def _answer(self, turn: TurnContext, *, msg: IncomingMessage, cid: str) -> None:
        stream = self._stream(turn, msg)
        answer: Answer | None = None
        try:
            answer = await self._ask(turn, msg, cid, stream)
            reply = render_answer(answer, citation_entities=self._options.citation_entities
                                  and on_teams(turn.activity))
        except Exception:
            log.exception("answering Teams message %s failed", msg.activity_id)
            reply = render_notice(messages.with_reference(messages.INTERNAL_ERROR, cid))
        activity = to_activity(reply)
        sent = await (stream.finish(activity) if stream and stream.started
                      else turn.send_activity(activity))
        if answer is not None:
            await self._remember(msg, answer, sent)

    async def _ask(self, turn: TurnContext, msg: IncomingMessage, cid: str,
                   stream: AnswerStream | None) -> Answer:
        history = await self._service.history(msg.conversation.history_key)
        question = Question(msg.text, msg.ask_context(), history, correlation_id=cid)
        if stream is not None:
            await stream.start(messages.TEAMS_WORKING)
            return await self._service.ask(question,
                                           preview=stream.show if stream.started else None)
        typing = TypingOptions(initial_delay_ms=0,
                               interval_ms=int(self._options.typing_interval_s * 1000))
        async with TypingIndicator(turn, typing_options=typing):
            return await self._service.ask(question)

    async def _remember(self, msg: IncomingMessage, answer: Answer,
                        sent: ResourceResponse | None) -> None:
        """Link the reply for feedback and keep the turn for follow-ups; the person already
        has the answer, so a failure here is only logged."""
        try:
            if sent is not None and sent.id:
                await self._service.link(answer, msg.conversation.base, sent.id)
            if answer.status is not AnswerStatus.ERROR:
                await self._service.remember(msg.conversation.history_key, msg.text, answer)
        except Exception:
            log.exception("could not store the Teams answer %s", sent.id if sent else "")

    # --- Feedback -------------------------------------------------------------------------

    async def _interaction(self, conversation: TeamsConversation, message_id: str) -> int | None:
        return await self._service.interaction_for(Platform.TEAMS, conversation.base, message_id)

    @guarded
    async def on_feedback(self, turn: TurnContext, state: TurnState) -> None:
        """Teams' feedback form (thumbs up or down, optional comment) on one of our answers."""
        try:
            feedback = parse_feedback(turn.activity)
            if feedback is None:
                log.info("ignoring a message/submitAction that is not feedback")
                return
            interaction = await self._interaction(feedback.conversation, feedback.target_id)
            if interaction is None:
                log.warning("feedback on %s, which is not a recorded answer", feedback.target_id)
                await send(turn, render_notice(messages.UNKNOWN_ANSWER_FEEDBACK))
                return
            await self._service.vote(interaction, feedback.user, feedback.vote, VIA_BUTTON,
                                     feedback.comment)
        finally:
            await turn.send_activity(invoke_ok())

    @guarded
    async def on_reaction(self, turn: TurnContext, state: TurnState) -> None:
        """👍 on an answer is an up-vote; taking it back retracts the vote."""
        change = parse_reaction(turn.activity)
        if change is None:
            return
        interaction = await self._interaction(change.conversation, change.target_id)
        if interaction is None:
            log.info("reaction on %s, which is not a recorded answer", change.target_id)
            return
        if change.retract and change.vote is not None:
            # A feedback-button vote is not the reaction's to take back.
            await self._service.retract_matching(interaction, change.user, change.vote,
                                                 VIA_REACTION)
        elif change.vote is not None:
            await self._service.vote(interaction, change.user, change.vote, VIA_REACTION)

    # --- Everything else ------------------------------------------------------------------

    async def on_error(self, turn: TurnContext, error: Exception) -> None:
        """Backstop for failures outside the handlers; the SDK's default would send the
        exception text to the person."""
        cid = current_correlation_id()
        cid = new_correlation_id() if cid == "-" else cid
        log.error("Teams turn failed [%s]: %s", cid, error, exc_info=error)
        await tell_failure(turn, cid)
