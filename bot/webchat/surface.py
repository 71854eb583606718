"""The web chat page as the chat flow sees it: events streamed to the browser's open request."""

from __future__ import annotations

import contextlib
import html
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from bot.chat.message import Thread, Vote
from bot.chat.surface import Delivery
from bot.webchat.render import render_answer, to_html
from rag import messages
from rag.i18n import tr
from rag.ports import TextSink
from rag.types import Answer, AnswerStatus

Send = Callable[[str, dict[str, Any]], Awaitable[None]]  # (event name, data) to the browser


class WebSurface:
    """One question's request: `preview`, `answer`, `notice` and `error` events."""

    def __init__(self, send: Send) -> None:
        self._send = send

    async def thread(self) -> Thread | None:
        return None  # the page keeps no thread; Sift's store keeps the conversation

    @contextlib.asynccontextmanager
    async def working(self, delivery: Delivery) -> AsyncIterator[TextSink | None]:
        async def preview(text: str) -> None:
            await self._send("preview", {"html": to_html(text, {})})

        await self._send("working", {"text": tr(messages.TEAMS_WORKING)})
        yield preview

    async def deliver(self, answer: Answer, delivery: Delivery) -> str:
        ref = uuid.uuid4().hex
        votable = answer.status is not AnswerStatus.ERROR and answer.interaction_id is not None
        await self._send("answer", {"html": render_answer(answer), "ref": ref if votable else "",
                                    "status": answer.status.value})
        return ref

    async def notice(self, text: str) -> None:
        await self._send("notice", {"html": html.escape(tr(text))})

    async def failure(self, correlation_id: str, message: str = messages.INTERNAL_ERROR
                      ) -> None:
        await self._send("error", {"html": html.escape(messages.with_reference(
            message, correlation_id))})

    async def escalate(self, people: Sequence[str]) -> None:
        await self.notice(messages.ESCALATION_SENT)

    async def voted(self, vote: Vote, interaction_id: int) -> str | None:
        await self.notice(messages.FEEDBACK_THANKS)
        return None
