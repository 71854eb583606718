"""What Slack and Teams share: admission (dedupe, size, quota), asking, message links, votes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from rag import messages
from rag.i18n import tr
from rag.lookup import Lookup
from rag.patience import NO_RETRY, Retrying
from rag.ports import TextSink
from rag.types import (
    Answer,
    AnswerStatus,
    AskContext,
    Candidate,
    Chunk,
    Citation,
    Platform,
    Question,
    Turn,
)

log = logging.getLogger(__name__)


class DedupeStore(Protocol):
    def claim(self, key: str, ttl_s: float) -> bool: ...


class CitedLike(Protocol):
    @property
    def n(self) -> int: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def chunk_id(self) -> str: ...

    @property
    def access(self) -> tuple[str, ...]: ...


class RecalledLike(Protocol):
    """A stored answer (storage.interactions.Recalled satisfies it)."""

    @property
    def platform(self) -> str: ...

    @property
    def channel(self) -> str: ...

    @property
    def user(self) -> str: ...

    @property
    def question(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def citations(self) -> Sequence[CitedLike]: ...

    @property
    def uncited(self) -> Sequence[CitedLike]: ...  # selected, read by the model, not cited


class AskedLike(Protocol):
    @property
    def question(self) -> str: ...

    @property
    def status(self) -> str: ...


class InteractionLinks(Protocol):
    def find_by_message(self, platform: str, channel: str, message_ref: str) -> int | None: ...

    def attach_message(self, interaction_id: int, channel: str, message_ref: str) -> None: ...

    def recall(self, interaction_id: int) -> RecalledLike | None: ...

    def asked_by(self, platform: str, user: str, limit: int = 5) -> Sequence[AskedLike]: ...


class FeedbackStore(Protocol):
    def vote(self, interaction_id: int, user: str, vote: int, channel: str,
             comment: str | None = None) -> None: ...

    def retract(self, interaction_id: int, user: str) -> None: ...

    def retract_matching(self, interaction_id: int, user: str, vote: int,
                         channel: str) -> bool: ...

    def add_comment(self, interaction_id: int, user: str, comment: str) -> None: ...


class QuotaStore(Protocol):
    def allow(self, who: str, limit: int, window_s: float) -> bool: ...


class HistoryStore(Protocol):
    def append(self, conversation_key: str, turns: Sequence[tuple[str, str]],
               keep: int) -> None: ...

    def recent(self, conversation_key: str, n: int) -> list[tuple[str, str]]: ...


@dataclass(frozen=True)
class ChatLimits:
    quota_per_minute: int = 10
    max_message_chars: int = 4000
    dedupe_ttl_s: float = 24 * 3600
    history_turns: int = 10


@dataclass(frozen=True)
class Gate:
    """Whether to answer. `reply` is the sentence to send instead; None means stay silent."""

    admitted: bool
    reply: str | None = None


@dataclass(frozen=True)
class ChatStores:
    dedupe: DedupeStore
    links: InteractionLinks
    feedback: FeedbackStore
    history: HistoryStore
    quota: QuotaStore


class Answering(Protocol):
    """The pipeline as chat asks it (bot/metrics wraps it to count answers)."""

    async def answer(self, question: Question, preview: TextSink | None = None) -> Answer: ...


class ChatService:
    """`retrying`: how a store call waits out a database that is away for a moment."""

    def __init__(self, pipeline: Answering, stores: ChatStores, limits: ChatLimits,
                 retrying: Retrying = NO_RETRY, lookup: Lookup | None = None,
                 vision: Callable[[], bool] = lambda: False) -> None:
        self._pipeline = pipeline
        self.reads_images = vision  # whether an attached image goes to the model as it is
        self.lookup = lookup  # the pipeline's search and documents, for tools (rag/lookup.py)
        self._stores = stores
        self._limits = limits
        self._store = retrying.blocking

    async def claim(self, event_key: str) -> bool:
        """False for a redelivered event (a platform retry), which must not be acted on twice."""
        return await self._store("claiming an event", self._claim, event_key)

    def _claim(self, event_key: str) -> bool:
        if self._stores.dedupe.claim(event_key, self._limits.dedupe_ttl_s):
            return True
        log.info("duplicate delivery %s ignored", event_key)
        return False

    async def admit(self, event_key: str, user: str, text: str) -> Gate:
        """Dedupe first: a redelivered event is dropped silently, it is not the person's doing.
        One trip off the event loop for both lookups (each trip waits for a thread and the GIL,
        which under load costs more than the queries)."""
        claimed = False

        def attempt() -> Gate:
            # A retry after the claim committed (the database went away before the quota
            # check) must not read the event's own claim as a redelivery and drop it.
            nonlocal claimed
            if not claimed:
                if not self._claim(event_key):
                    return Gate(False)
                claimed = True
            return self._check(user, text)

        return await self._store("admitting a message", attempt)

    def _check(self, user: str, text: str) -> Gate:
        if not text.strip():
            return Gate(False, tr(messages.EMPTY_QUESTION))
        if len(text) > self._limits.max_message_chars:
            return Gate(False, tr(messages.TOO_LONG).format(length=len(text),
                                                       limit=self._limits.max_message_chars))
        limit = self._limits.quota_per_minute
        if not self._stores.quota.allow(user, limit, 60.0):
            return Gate(False, tr(messages.QUOTA_EXCEEDED).format(limit=limit))
        return Gate(True)

    async def ask(self, question: Question, preview: TextSink | None = None) -> Answer:
        """The answer; `preview` gets its text so far while the model writes it."""
        return await self._pipeline.answer(question, preview)

    async def link(self, answer: Answer, channel: str, message_ref: str) -> None:
        """Remember which platform message carries the answer, so reactions find it."""
        if answer.interaction_id is not None:
            await self._store("linking the answer", self._stores.links.attach_message,
                              answer.interaction_id, channel, message_ref)

    async def interaction_for(self, platform: str, channel: str, message_ref: str) -> int | None:
        return await self._store("finding the voted answer", self._stores.links.find_by_message,
                                 platform, channel, message_ref)

    async def vote(self, interaction_id: int, user: str, vote: int, channel: str,
                   comment: str | None = None) -> None:
        await self._store("saving a vote", self._stores.feedback.vote, interaction_id, user, vote,
                          channel, comment)

    async def retract(self, interaction_id: int, user: str) -> None:
        await self._store("retracting a vote", self._stores.feedback.retract, interaction_id, user)

    async def retract_matching(self, interaction_id: int, user: str, vote: int,
                               channel: str) -> bool:
        """Retract only a vote that is still `vote` from `channel`; True when one was."""
        return await self._store("retracting a vote", self._stores.feedback.retract_matching,
                                 interaction_id, user, vote, channel)

    async def comment(self, interaction_id: int, user: str, comment: str) -> None:
        await self._store("saving a comment", self._stores.feedback.add_comment, interaction_id,
                          user, comment)

    async def history(self, conversation_key: str) -> tuple[Turn, ...]:
        rows = await self._store("reading the conversation", self._stores.history.recent,
                                 conversation_key, self._limits.history_turns)
        return tuple(Turn(role, text) for role, text in rows)

    async def remember(self, conversation_key: str, question: str, answer: Answer) -> None:
        await self._store("keeping the conversation", self._remember, conversation_key, question,
                          answer.text)

    def _remember(self, conversation_key: str, question: str, answer: str) -> None:
        self._stores.history.append(conversation_key, [("user", question), ("assistant", answer)],
                                    self._limits.history_turns)

    async def recall(self, interaction_id: int) -> Answer | None:
        """A stored answer as an Answer again (for sharing it); None when it cannot be."""
        found = await self._store("recalling an answer", self._stores.links.recall, interaction_id)
        if found is None:
            return None
        context = AskContext(platform=found.platform, channel=found.channel,
                             user=found.user)
        citations = tuple(Citation(c.n, c.doc_id, c.title, c.url, c.chunk_id)
                          for c in found.citations)
        # Every chunk the answer was written from, with the access it had: a share is checked
        # against it again.
        used = tuple(Candidate(c.n, Chunk(c.chunk_id, c.doc_id, "", c.title, "", c.url,
                                          access=tuple(c.access)), 0.0, selected=True,
                               cited=c in found.citations)
                     for c in (*found.citations, *found.uncited))
        return Answer(found.text, AnswerStatus(found.status), Question(found.question, context),
                      citations=citations, candidates=used, interaction_id=interaction_id)

    async def asked_by(self, platform: Platform, user: str, limit: int = 5) -> list[str]:
        rows = await self._store("reading earlier questions", self._stores.links.asked_by,
                                 platform, user, limit)
        return [r.question for r in rows]
