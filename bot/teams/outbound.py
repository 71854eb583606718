"""Rendered replies to SDK activities, and Teams' streaming protocol for a whole answer."""

from __future__ import annotations

import logging

from aiohttp import ClientResponseError
from microsoft_agents.activity import (
    Activity,
    ActivityTypes,
    AIEntity,
    ClientCitation,
    ClientCitationAppearance,
    Entity,
    InvokeResponse,
    ResourceResponse,
    StreamInfo,
)
from microsoft_agents.hosting.core import TurnContext

from bot.render.teams import TeamsCitation, TeamsReply

log = logging.getLogger(__name__)

AI_LABEL = "AIGeneratedContent"


def _client_citation(c: TeamsCitation) -> ClientCitation:
    return ClientCitation(position=c.position, appearance=ClientCitationAppearance(
        name=c.name, abstract=c.abstract, url=c.url, keywords=list(c.keywords) or None))


def to_activity(reply: TeamsReply) -> Activity:
    """One message activity: Markdown text, the feedback loop flag, one AI entity at most."""
    activity = Activity(type=ActivityTypes.message, text=reply.text, text_format="markdown")
    if reply.feedback:
        activity.channel_data = {"feedbackLoopEnabled": True}
    if reply.ai_generated or reply.citations:
        # Fields left unset stay off the wire: citations without the label carry no
        # additionalType at all.
        entity = AIEntity(id="", citation=[_client_citation(c) for c in reply.citations] or None)
        if reply.ai_generated:
            entity.additional_type = [AI_LABEL]
        activity.entities = [entity]
    return activity


def invoke_ok() -> Activity:
    """What Teams expects after `message/submitAction`: 200 with an empty JSON object."""
    return Activity(type=ActivityTypes.invoke_response, value=InvokeResponse(status=200, body={}))


class AnswerStream:
    """Teams' streaming protocol for an answer that is computed whole.

    The pipeline returns the answer in one piece, so the stream is a progress line at once
    (an informative update) and then the final message that replaces it. The SDK's
    StreamingResponse derives citation pop-ups itself (480-character excerpts, dropped without
    the AI label); this keeps the renderer's entities. If Teams refuses the stream, the answer
    goes out as an ordinary message.
    """

    def __init__(self, turn: TurnContext) -> None:
        self._turn = turn
        self._stream_id = ""

    @property
    def started(self) -> bool:
        return bool(self._stream_id)

    async def start(self, text: str) -> None:
        update = Activity(type=ActivityTypes.typing, text=text, entities=[
            StreamInfo(stream_type="informative", stream_sequence=1)])
        try:
            sent = await self._turn.send_activity(update)
        except ClientResponseError as exc:
            if not 400 <= exc.status < 500:
                raise
            log.warning("Teams refused to stream (%s %s); sending the answer whole",
                        exc.status, exc.message)
            return
        self._stream_id = sent.id if sent and sent.id else ""

    async def finish(self, activity: Activity) -> ResourceResponse | None:
        """Send the final message. While streaming, Teams shows one message, created by the
        informative update and finished here; its id is the stream id, which is what
        feedback on it will name."""
        if not self._stream_id:
            return await self._turn.send_activity(activity)
        final: list[Entity] = [StreamInfo(stream_type="final", stream_id=self._stream_id)]
        activity.entities = final + list(activity.entities or [])
        await self._turn.send_activity(activity)
        return ResourceResponse(id=self._stream_id)
