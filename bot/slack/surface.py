"""One Slack conversation as the chat flow sees it: threads, 👀, live answers, ephemerals."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial

from slack_sdk.errors import SlackApiError

from bot.chat.message import VIA_BUTTON, Kind, Thread, Vote
from bot.chat.surface import Delivery
from bot.slack.inbound import Incoming, Me, thread_view
from bot.slack.live import LiveAnswer, StreamTarget
from bot.slack.outbound import SlackOutbound
from bot.slack.render import (
    Buttons,
    render_answer,
    render_call,
    render_error,
    render_notice,
    streamable,
)
from bot.slack.spec import APPEND_EVERY_S
from rag import messages
from rag.i18n import tr
from rag.ports import TextSink
from rag.types import Answer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SlackOptions:
    streaming: bool = False
    ask_why_on_downvote: bool = True
    assistant_status: bool = False  # set_status in DM threads instead of the 👀 reaction
    history_turns: int = 10
    append_every_s: float = APPEND_EVERY_S  # live answers: at most one appendStream this often
    markdown_block: bool = False  # answers in Slack's markdown block where it renders them


def _buttons(delivery: Delivery) -> Buttons:
    return Buttons(delivery.share, delivery.share_blocked, delivery.help)


def mention(person: str) -> str:
    """Slack markup that calls a user (U…/W…) or a user group (S…)."""
    return f"<!subteam^{person}>" if person.startswith("S") else f"<@{person}>"


class SlackSurface:
    """Built per event. `incoming` is the message (None for votes and button clicks);
    `thread_ts` is where notices go."""

    def __init__(self, out: SlackOutbound, options: SlackOptions, me: Me, *, channel: str,
                 user: str, thread_ts: str, incoming: Incoming | None = None) -> None:
        self._out = out
        self._options = options
        self._me = me
        self._channel = channel
        self._user = user
        self._thread_ts = thread_ts
        self._incoming = incoming
        self._live: LiveAnswer | None = None

    @classmethod
    def for_message(cls, out: SlackOutbound, options: SlackOptions, me: Me,
                    incoming: Incoming) -> SlackSurface:
        return cls(out, options, me, channel=incoming.channel, user=incoming.user,
                   thread_ts=incoming.answer_thread(threaded=options.streaming),
                   incoming=incoming)

    async def thread(self) -> Thread | None:
        msg = self._incoming
        if msg is None or not msg.thread_ts:
            return None
        found = await self._out.thread(msg.channel, msg.thread_ts)
        return thread_view(found, msg.ts, self._me, self._options.history_turns,
                           around=msg.whole_thread)

    @contextlib.asynccontextmanager
    async def working(self, delivery: Delivery) -> AsyncIterator[TextSink | None]:
        """👀 on the question while working, or the assistant thread's status line; the live
        answer's preview sink when streaming (never for private answers)."""
        msg = self._incoming
        if msg is not None and not delivery.private and self._options.streaming:
            target = StreamTarget(msg.channel, msg.answer_thread(threaded=True), msg.team,
                                  msg.user)
            self._live = LiveAnswer(self._out, target, self._options.append_every_s,
                                    buttons=_buttons(delivery),
                                    markdown=self._options.markdown_block)
        async with self._indicator():
            yield self._live.show if self._live is not None else None

    @contextlib.asynccontextmanager
    async def _indicator(self) -> AsyncIterator[None]:
        # Shown while the answer is worked on, not before: the call runs beside the work,
        # so Slack's round trip is not added to every answer's time.
        msg = self._incoming
        if msg is None or not msg.ts or msg.kind is Kind.COMMAND:
            yield  # a private question marks nothing everyone sees
            return
        show: Awaitable[bool]
        hide: Callable[[], Awaitable[object]]
        if self._options.assistant_status and msg.kind is Kind.DIRECT and msg.thread_ts:
            show = self._out.set_status(msg.channel, msg.thread_ts, tr(messages.WORKING_STATUS))
            # Slack clears the status on our reply; clearing it here covers the failures.
            hide = partial(self._out.set_status, msg.channel, msg.thread_ts, "")
        else:
            show = self._out.react(msg.channel, msg.ts)
            hide = partial(self._out.unreact, msg.channel, msg.ts)
        shown = asyncio.ensure_future(show)
        try:
            yield
        finally:
            if await _shown(shown):
                await hide()

    async def deliver(self, answer: Answer, delivery: Delivery) -> str:
        """The live reply completed; an answer nobody saw being written is replayed through a
        stream, or posted; a private answer goes to the asker alone."""
        buttons = _buttons(delivery)
        if delivery.private:
            return await self._out.ephemeral(self._channel, self._user, self._thread_ts,
                                             render_answer(answer, buttons=buttons,
                                                           markdown=self._options.markdown_block))
        live = self._live
        shown = await live.finish(answer) if live else None
        if shown:
            return shown
        if live is not None and live.can_stream and streamable(answer):  # refused: not again
            try:
                return await live.replay(answer)
            except SlackApiError as exc:  # startStream refused: nothing is shown yet
                log.warning("streaming failed (%s); posting the answer at once", exc)
        return await self._out.post(self._channel, self._thread_ts, render_answer(
            answer, buttons=buttons, markdown=self._options.markdown_block))

    async def notice(self, text: str) -> None:
        await self._out.ephemeral(self._channel, self._user, self._thread_ts,
                                  render_notice(text))

    async def failure(self, correlation_id: str, message: str = messages.INTERNAL_ERROR
                      ) -> None:
        """A failed question is reported where its answer would have been (a private one's
        privately: /sift, "Ask Sift about this"); a failed vote privately to the voter."""
        notice = render_error(message, correlation_id)
        if self._incoming is not None and self._incoming.kind is not Kind.COMMAND:
            await self._out.post(self._channel, self._thread_ts, notice)
        else:
            await self._out.ephemeral(self._channel, self._user, self._thread_ts, notice)

    async def escalate(self, people: Sequence[str]) -> None:
        text = tr(messages.ESCALATION).format(people=" ".join(mention(p) for p in people),
                                          asker=f"<@{self._user}>")
        await self._out.post(self._channel, self._thread_ts, render_call(text))

    async def voted(self, vote: Vote, interaction_id: int) -> str | None:
        """After a 👎: ask what was missing, in the answer's thread; after a button 👍: thanks."""
        if vote.vote < 0 and self._options.ask_why_on_downvote:
            thread = vote.thread or await self._out.thread_of(vote.channel, vote.message_ref)
            await self._out.ephemeral(vote.channel, vote.user, thread,
                                      render_notice(messages.DOWNVOTE_PROMPT))
            return thread
        if vote.via == VIA_BUTTON:
            await self._out.ephemeral(vote.channel, vote.user, vote.thread,
                                      render_notice(messages.FEEDBACK_THANKS))
        return None


async def _shown(call: asyncio.Future[bool]) -> bool:
    """Whether the working indicator went up; its failure never costs the answer."""
    try:
        return await call
    except Exception as exc:  # Slack unreachable, say: the answer is already on its way
        log.warning("could not show that the question is being worked on: %s", exc)
        return False
