"""Thin Teams handlers: parse the activity, hand it to the chat flow with a Teams surface.

A message is acknowledged at once (HTTP 202) and answered in a proactive turn: Teams expects
the request to finish within about 15 seconds, and grading plus writing can take longer.
The proactive turn replies to the original message, so the reply lands in the same thread.
"""

from __future__ import annotations

import logging

from microsoft_agents.activity import Activity
from microsoft_agents.hosting.core import ChannelAdapter, TurnContext, TurnState
from microsoft_agents.hosting.core.authorization import ClaimsIdentity

from bot.chat.flow import ChatFlow
from bot.chat.message import VIA_BUTTON, VIA_REACTION, Vote
from bot.chat.tasks import Background, Busy
from bot.teams.inbound import (
    IncomingMessage,
    parse_feedback,
    parse_message,
    parse_reaction,
    team_of,
)
from bot.teams.outbound import invoke_ok, to_activity
from bot.teams.render import render_notice
from bot.teams.spec import PLATFORM as TEAMS_PLATFORM
from bot.teams.surface import TeamsOptions, TeamsSurface
from rag import messages
from rag.logcontext import correlated, current_correlation_id

log = logging.getLogger(__name__)


def continuation_of(activity: Activity) -> Activity:
    """A proactive turn that replies to `activity` exactly as the inbound turn would have."""
    continuation = activity.get_conversation_reference().get_continuation_activity()
    continuation.id = activity.id
    return continuation


async def tell_failure(turn: TurnContext, correlation_id: str) -> None:
    """The person hears that it failed and gets a reference; a failure to say so is logged."""
    try:
        await turn.send_activity(to_activity(render_notice(
            messages.with_reference(messages.INTERNAL_ERROR, correlation_id))))
    except Exception:
        log.exception("could not send the error message to Teams")


class TeamsHandlers:
    def __init__(self, flow: ChatFlow, adapter: ChannelAdapter, options: TeamsOptions,
                 tasks: Background) -> None:
        self._flow = flow
        self._adapter = adapter
        self._options = options
        self._tasks = tasks

    def _surface(self, turn: TurnContext, msg: IncomingMessage | None = None) -> TeamsSurface:
        return TeamsSurface(turn, self._options, personal=msg is not None and msg.personal)

    async def on_message(self, turn: TurnContext, state: TurnState) -> None:
        msg = parse_message(turn.activity)
        if msg is None:
            log.debug("channel message %s does not mention Sift", turn.activity.id)
            return
        identity = turn.identity or ClaimsIdentity({})
        scope = turn.turn_state.get(self._adapter.OAUTH_SCOPE_KEY)
        audience = scope if isinstance(scope, str) else None
        try:
            self._tasks.spawn(self._answer_later(identity, audience,
                                                 continuation_of(turn.activity), msg))
        except Busy:  # Teams does not deliver a message again: say so in this turn
            await turn.send_activity(to_activity(render_notice(messages.BUSY)))

    async def _answer_later(self, identity: ClaimsIdentity, audience: str | None,
                            continuation: Activity, msg: IncomingMessage) -> None:
        async def answer(turn: TurnContext) -> None:
            await self._flow.on_message(msg.to_message(), self._surface(turn, msg))

        try:
            await self._adapter.continue_conversation_with_claims(identity, continuation,
                                                                 answer, audience)
        except Exception:
            log.exception("could not deliver the answer to Teams message %s", msg.activity_id)

    async def on_feedback(self, turn: TurnContext, state: TurnState) -> None:
        """Teams' feedback form (thumbs up or down, optional comment) on one of our answers."""
        try:
            feedback = parse_feedback(turn.activity)
            if feedback is None:
                log.info("ignoring a message/submitAction that is not feedback")
                return
            vote = Vote(TEAMS_PLATFORM, feedback.conversation.base, feedback.target_id,
                        feedback.user, feedback.vote, VIA_BUTTON, comment=feedback.comment,
                        team=team_of(turn.activity))
            await self._flow.on_vote(vote, self._surface(turn))
        finally:
            await turn.send_activity(invoke_ok())

    async def on_reaction(self, turn: TurnContext, state: TurnState) -> None:
        """👍 on an answer is an up-vote; taking it back retracts the vote it cast."""
        change = parse_reaction(turn.activity)
        if change is None or change.vote is None:
            return
        key = f"teams:{change.conversation.base}:reaction:{turn.activity.id}" \
            if turn.activity.id else ""
        vote = Vote(TEAMS_PLATFORM, change.conversation.base, change.target_id, change.user,
                    change.vote, VIA_REACTION, added=not change.retract, event_key=key,
                    team=team_of(turn.activity))
        await self._flow.on_vote(vote, self._surface(turn))

    async def on_error(self, turn: TurnContext, error: Exception) -> None:
        """Backstop for failures outside the flow; the SDK's default would send the exception
        text to the person."""
        with correlated(None if current_correlation_id() == "-" else current_correlation_id()
                        ) as cid:
            log.error("Teams turn failed [%s]: %s", cid, error, exc_info=error)
            await tell_failure(turn, cid)



