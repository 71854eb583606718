"""In-memory stand-ins for the ChatService stores, with storage's semantics, for adapter tests."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot.chat.service import ChatStores
from rag.types import Answer
from storage.errors import StorageError, UnknownInteraction
from storage.interactions import AskedBefore, Recalled, RecalledCitation


class MemoryDedupe:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()  # ChatService calls from worker threads

    def claim(self, key: str, ttl_s: float) -> bool:
        with self._lock:
            now = self._clock()
            if self._until.get(key, 0.0) > now:
                return False
            self._until[key] = now + ttl_s
            return True


@dataclass
class StoredInteraction:
    answer: Answer
    channel: str = ""
    message_ref: str = ""


class MemoryInteractions:
    """The recorder and the message links: `record` is the pipeline's InteractionRecorder."""

    def __init__(self) -> None:
        self.rows: dict[int, StoredInteraction] = {}

    def record(self, answer: Answer) -> int:
        interaction_id = len(self.rows) + 1
        self.rows[interaction_id] = StoredInteraction(answer)
        return interaction_id

    def find_by_message(self, platform: str, channel: str, message_ref: str) -> int | None:
        found = [i for i, row in self.rows.items()
                 if str(row.answer.question.context.platform) == platform
                 and row.channel == channel and row.message_ref == message_ref]
        return max(found) if found else None

    def attach_message(self, interaction_id: int, channel: str, message_ref: str) -> None:
        if interaction_id not in self.rows:
            raise UnknownInteraction(interaction_id)
        self.rows[interaction_id].channel = channel
        self.rows[interaction_id].message_ref = message_ref

    def recall(self, interaction_id: int) -> Recalled | None:
        row = self.rows.get(interaction_id)
        if row is None:
            return None
        a, ctx = row.answer, row.answer.question.context
        access = {c.chunk.chunk_id: c.chunk.access for c in a.candidates}
        cited = tuple(RecalledCitation(c.n, c.doc_id, c.title, c.url, c.chunk_id,
                                       access.get(c.chunk_id, ())) for c in a.citations)
        cited_ids = {c.chunk_id for c in a.citations}
        uncited = tuple(RecalledCitation(0, c.chunk.doc_id, c.chunk.title, c.chunk.url,
                                         c.chunk.chunk_id, c.chunk.access)
                        for c in a.candidates if c.selected and c.chunk.chunk_id not in cited_ids)
        return Recalled(str(ctx.platform), ctx.channel, ctx.user, a.question.text, a.text,
                        str(a.status), cited, uncited)

    def asked_by(self, platform: str, user: str, limit: int = 5) -> list[AskedBefore]:
        mine = [r.answer for _, r in sorted(self.rows.items(), reverse=True)
                if str(r.answer.question.context.platform) == platform
                and r.answer.question.context.user == user]
        return [AskedBefore(a.question.text, str(a.status), datetime.now(UTC))
                for a in mine[:limit]]


@dataclass
class Vote:
    vote: int
    channel: str
    comment: str | None = None


@dataclass
class MemoryFeedback:
    interactions: MemoryInteractions
    votes: dict[tuple[int, str], Vote] = field(default_factory=dict)

    def _known(self, interaction_id: int) -> None:
        if interaction_id not in self.interactions.rows:
            raise UnknownInteraction(interaction_id)

    def vote(self, interaction_id: int, user: str, vote: int, channel: str,
             comment: str | None = None) -> None:
        if vote not in (1, -1):  # as the repository: nothing else is a vote
            raise StorageError(f"A vote is +1 or -1, not {vote!r}; nothing was written.")
        self._known(interaction_id)
        old = self.votes.get((interaction_id, user))
        kept = comment if comment is not None else (old.comment if old else None)
        self.votes[(interaction_id, user)] = Vote(vote, channel, kept)

    def retract(self, interaction_id: int, user: str) -> None:
        self._known(interaction_id)
        self.votes.pop((interaction_id, user), None)

    def retract_matching(self, interaction_id: int, user: str, vote: int, channel: str) -> bool:
        self._known(interaction_id)
        found = self.votes.get((interaction_id, user))
        if found is None or (found.vote, found.channel) != (vote, channel):
            return False
        del self.votes[(interaction_id, user)]
        return True

    def add_comment(self, interaction_id: int, user: str, comment: str) -> None:
        self._known(interaction_id)
        if (interaction_id, user) in self.votes:
            self.votes[(interaction_id, user)].comment = comment


class MemoryQuota:
    """A sliding window per person, in memory (the repository keeps it in the database)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seen: dict[str, deque[float]] = {}

    def allow(self, who: str, limit: int, window_s: float) -> bool:
        now = self._clock()
        times = self._seen.setdefault(who, deque())
        while times and now - times[0] >= window_s:
            times.popleft()
        if len(times) >= limit:
            return False
        times.append(now)
        return True


class MemoryHistory:
    def __init__(self) -> None:
        self.turns: dict[str, list[tuple[str, str]]] = {}

    def append(self, conversation_key: str, turns: Sequence[tuple[str, str]],
               keep: int) -> None:
        rows = self.turns.setdefault(conversation_key, [])
        rows.extend(turns)
        del rows[:-keep or None]

    def recent(self, conversation_key: str, n: int) -> list[tuple[str, str]]:
        return self.turns.get(conversation_key, [])[-n:] if n else []


@dataclass
class MemorySyncs:
    """The pipeline's SyncProgress: the sources whose first sync is under way."""

    first_running: list[str] = field(default_factory=list)
    down: bool = False  # the database cannot be read

    def first_syncs_running(self) -> list[str]:
        if self.down:
            raise ConnectionError("the database refused the connection")
        return list(self.first_running)


@dataclass
class MemoryChatStores:
    """The chat stores, plus the recorder, sharing one set of interactions."""

    interactions: MemoryInteractions = field(default_factory=MemoryInteractions)
    dedupe: MemoryDedupe = field(default_factory=MemoryDedupe)
    history: MemoryHistory = field(default_factory=MemoryHistory)
    quota: MemoryQuota = field(default_factory=MemoryQuota)
    syncs: MemorySyncs = field(default_factory=MemorySyncs)
    feedback: MemoryFeedback = field(init=False)

    def __post_init__(self) -> None:
        self.feedback = MemoryFeedback(self.interactions)

    def chat_stores(self) -> ChatStores:
        return ChatStores(dedupe=self.dedupe, links=self.interactions, feedback=self.feedback,
                          history=self.history, quota=self.quota)
