"""What another tool may do as the person its token names, through the one chat flow: ask
(admitted, answered, recorded and linked like a DM question), search and read documents
(admitted the same way, under the same access groups), vote on its answers."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace

from bot.chat.flow import ChatFlow
from bot.chat.message import VIA_BUTTON, ChatMessage, Kind, Thread, Vote
from bot.chat.surface import Delivery
from bot.chat.tasks import Background, Busy
from rag import messages
from rag.lookup import Document, Passage
from rag.ports import TextSink
from rag.types import Answer, AnswerStatus, AskContext, Mode

NOT_FOUND = ("There is no document {ref} that you may read: check the id or URL a search "
             "returned.")
NO_LOOKUP = "This Sift cannot search or read documents for tools (no index is connected)."
_QUOTA = messages.QUOTA_EXCEEDED.split("{", 1)[0]


class CallRefused(Exception):
    """A call that gets no result: `status` as HTTP names it, `sentence` for the person."""

    def __init__(self, status: int, sentence: str, reference: str = "") -> None:
        super().__init__(sentence)
        self.status = status
        self.sentence = sentence
        self.reference = reference


@dataclass(frozen=True)
class Caller:
    """Who calls: the email a personal access token acts as, on `platform` ("api", "mcp")."""

    platform: str
    email: str
    token_id: int

    def message(self, text: str) -> ChatMessage:
        """A direct message from the caller: the DM rule decides its documents; the channel
        is the caller's own, so only they can vote on their answers."""
        return ChatMessage(self.platform, Kind.DIRECT, f"{self.platform}:{uuid.uuid4().hex}",
                           "", self.email, "", self.email, text, email=self.email)


@dataclass
class ToolSurface:
    """The chat flow's Surface for a call: it keeps what the flow says, for the caller."""

    preview: TextSink | None = None
    answer: Answer | None = None
    ref: str = ""
    notices: list[str] = field(default_factory=list)
    failed: tuple[str, str] | None = None  # (correlation id, sentence)

    async def thread(self) -> Thread | None:
        return None  # a call has no thread: each question stands alone

    @contextlib.asynccontextmanager
    async def working(self, delivery: Delivery) -> AsyncIterator[TextSink | None]:
        yield self.preview

    async def deliver(self, answer: Answer, delivery: Delivery) -> str:
        self.answer = answer
        votable = answer.status is not AnswerStatus.ERROR and answer.interaction_id is not None
        self.ref = uuid.uuid4().hex if votable else ""
        return self.ref

    async def notice(self, text: str) -> None:
        self.notices.append(text)

    async def failure(self, correlation_id: str, message: str = messages.INTERNAL_ERROR
                      ) -> None:
        self.failed = (correlation_id, message)

    async def escalate(self, people: Sequence[str]) -> None:
        self.notices.append(messages.ESCALATION_SENT)

    async def voted(self, vote: Vote, interaction_id: int) -> str | None:
        self.notices.append(messages.FEEDBACK_THANKS)
        return None

    def refusal(self) -> CallRefused:
        """Why no answer came: the flow's failure, or the sentence it said instead."""
        if self.failed is not None:
            cid, sentence = self.failed
            return CallRefused(500, messages.with_reference(sentence, cid), cid)
        said = self.notices[0] if self.notices else messages.INTERNAL_ERROR
        return CallRefused(_status_of(said), said)


def _status_of(sentence: str) -> int:
    if sentence.startswith(_QUOTA):
        return 429
    if sentence == messages.BUSY:
        return 503
    if sentence == messages.CHANNEL_OFF:
        return 403
    return 400  # the question itself: empty, too long


class Calls:
    """One per surface (the API, MCP); `background` bounds the answers in progress."""

    def __init__(self, flow: ChatFlow, background: Background) -> None:
        self._flow = flow
        self.background = background

    async def ask(self, caller: Caller, question: str, mode: Mode | None = None,
                  preview: TextSink | None = None) -> tuple[Answer, str]:
        """The answer and its id for votes; CallRefused when the flow gave none."""
        surface = ToolSurface(preview)
        msg = replace(caller.message(question.strip()), mode=mode)
        try:
            await self.background.spawn(self._flow.on_message(msg, surface))
        except Busy:
            raise CallRefused(503, messages.BUSY) from None
        if surface.answer is None:
            raise surface.refusal()
        return surface.answer, surface.ref

    async def search(self, caller: Caller, query: str, limit: int) -> list[Passage]:
        lookup = self._flow.service.lookup
        if lookup is None:
            raise CallRefused(503, NO_LOOKUP)
        context = await self._admitted(caller, query)
        return await lookup.search(context, query.strip(), limit)

    async def document(self, caller: Caller, ref: str) -> Document:
        lookup = self._flow.service.lookup
        if lookup is None:
            raise CallRefused(503, NO_LOOKUP)
        context = await self._admitted(caller, ref)
        is_url = ref.startswith(("http://", "https://"))
        found = await lookup.document(context, doc_id="" if is_url else ref,
                                      url=ref if is_url else "")
        if found is None:  # absent and forbidden look the same: nothing to probe with
            raise CallRefused(404, NOT_FOUND.format(ref=ref))
        return found

    async def _admitted(self, caller: Caller, text: str) -> AskContext:
        context = await self._flow.context_for(caller.message(text.strip()))
        if isinstance(context, str):
            raise CallRefused(_status_of(context), context)
        return context

    async def vote(self, caller: Caller, answer_id: str, value: int,
                   comment: str | None = None) -> str:
        surface = ToolSurface()
        vote = Vote(caller.platform, caller.email, answer_id, caller.email, value, VIA_BUTTON,
                    comment=comment)
        await self._flow.on_vote(vote, surface)
        if surface.failed is not None:
            raise surface.refusal()
        if messages.UNKNOWN_ANSWER_FEEDBACK in surface.notices:  # or another person's answer
            raise CallRefused(404, messages.UNKNOWN_ANSWER_FEEDBACK)
        return surface.notices[0] if surface.notices else messages.FEEDBACK_THANKS

