"""One Teams conversation as the chat flow sees it: typing or a stream, replies, mentions."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from microsoft_agents.activity import Activity, Channels
from microsoft_agents.hosting.core import TurnContext
from microsoft_agents.hosting.core.app import TypingIndicator, TypingOptions

from bot.chat.message import Thread, Vote
from bot.chat.surface import Delivery
from bot.teams.live import AnswerStream
from bot.teams.outbound import mention_activity, to_activity
from bot.teams.render import TeamsReply, render_answer, render_notice
from bot.teams.spec import STREAM_INTERVAL_S
from rag import messages
from rag.i18n import tr
from rag.ports import TextSink
from rag.types import Answer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TeamsOptions:
    streaming: bool = True
    citation_entities: bool = True
    typing_interval_s: float = 3.0
    stream_interval_s: float = STREAM_INTERVAL_S  # least time between streaming updates


def on_teams(activity: Activity) -> bool:
    return activity.channel_id is not None and activity.channel_id.channel == Channels.ms_teams


class TeamsSurface:
    """Built per turn; `personal` chats stream (Teams streams only one-to-one)."""

    def __init__(self, turn: TurnContext, options: TeamsOptions, *, personal: bool) -> None:
        self._turn = turn
        self._options = options
        self._personal = personal
        self._stream: AnswerStream | None = None
        self._typing = contextlib.AsyncExitStack()  # closed before the answer goes out

    async def _send(self, reply: TeamsReply) -> str:
        sent = await self._turn.send_activity(to_activity(reply))
        return sent.id if sent is not None and sent.id else ""

    async def thread(self) -> Thread | None:
        return None  # Teams does not hand bots a thread's history: Sift keeps its own

    @contextlib.asynccontextmanager
    async def working(self, delivery: Delivery) -> AsyncIterator[TextSink | None]:
        if self._options.streaming and self._personal and on_teams(self._turn.activity):
            self._stream = AnswerStream(self._turn, self._options.stream_interval_s)
            self._stream.open(tr(messages.TEAMS_WORKING))
            yield self._stream.show
            return
        typing = TypingOptions(initial_delay_ms=0,
                               interval_ms=int(self._options.typing_interval_s * 1000))
        async with self._typing:
            await self._typing.enter_async_context(
                TypingIndicator(self._turn, typing_options=typing))
            yield None

    async def deliver(self, answer: Answer, delivery: Delivery) -> str:
        reply = render_answer(answer, citation_entities=self._options.citation_entities
                              and on_teams(self._turn.activity))
        return await self._finish(to_activity(reply))

    async def _finish(self, activity: Activity) -> str:
        # A typing indicator still on its way (retried after a 429, say) lands first.
        await self._typing.aclose()
        stream = self._stream
        sent = await (stream.finish(activity) if stream is not None
                      else self._turn.send_activity(activity))
        return sent.id if sent is not None and sent.id else ""

    async def notice(self, text: str) -> None:
        await self._send(render_notice(text))

    async def failure(self, correlation_id: str, message: str = messages.INTERNAL_ERROR
                      ) -> None:
        """The person hears that it failed and gets a reference; an open stream ends with it."""
        notice = render_notice(messages.with_reference(message, correlation_id))
        await self._finish(to_activity(notice))

    async def escalate(self, people: Sequence[str]) -> None:
        asker = self._turn.activity.from_property
        name = asker.name if asker is not None and asker.name else "someone"
        calls = " ".join(f"<at>{p}</at>" for p in people)
        await self._turn.send_activity(mention_activity(
            tr(messages.ESCALATION).format(people=calls, asker=name), list(people)))

    async def voted(self, vote: Vote, interaction_id: int) -> str | None:
        return None  # Teams' feedback form carries its own comment box and thank-you
