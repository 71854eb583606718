"""After a down vote, the person's next message in that conversation is the "what was missing?"
comment. The invitation is kept in the shared store (the database in `sift serve`), so the
reply counts whichever replica or worker receives it; it lapses after `ttl_s`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from rag.patience import NO_RETRY, Retrying


class Expiring(Protocol):
    """Values that expire: storage.expiring.ExpiringStore, or a fake in tests."""

    def put(self, key: str, value: dict[str, Any], ttl_s: float) -> None: ...

    def get(self, key: str) -> dict[str, Any] | None: ...

    def take(self, key: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class CommentKey:
    channel: str
    thread: str  # "" at the top level of a DM
    user: str

    @property
    def stored(self) -> str:
        return f"comment|{self.channel}|{self.thread}|{self.user}"


class PendingComments:
    def __init__(self, store: Expiring, ttl_s: float = 3600.0,
                 retrying: Retrying = NO_RETRY) -> None:
        self._store = store
        self._ttl = ttl_s
        self._call = retrying.blocking

    async def expect(self, key: CommentKey, interaction_id: int) -> None:
        await self._call("awaiting a comment", self._store.put, key.stored,
                         {"interaction": interaction_id}, self._ttl)

    async def peek(self, key: CommentKey) -> int | None:
        return _interaction(await self._call("looking for an awaited comment", self._store.get,
                                             key.stored))

    async def take(self, key: CommentKey) -> int | None:
        """The awaited interaction, no longer awaited: of two messages at once, one is it."""
        return _interaction(await self._call("taking an awaited comment", self._store.take,
                                             key.stored))


def _interaction(found: dict[str, Any] | None) -> int | None:
    return None if found is None else int(found["interaction"])
