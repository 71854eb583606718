"""Sources the index still holds but the settings no longer name: found, and removed."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol


class SourceIndex(Protocol):
    async def count_by_source(self) -> dict[str, int]: ...

    async def delete_source(self, source: str) -> int: ...


class SourceState(Protocol):
    def forget_source(self, source: str) -> None: ...


async def unconfigured(index: SourceIndex, configured: Collection[str]) -> dict[str, int]:
    """Chunk counts of the indexed sources that are not configured (e.g. the sample, once a
    person configures their own): answers would keep citing them otherwise."""
    counts = await index.count_by_source()
    return {name: n for name, n in sorted(counts.items()) if name not in configured and n}


async def prune(index: SourceIndex, state: SourceState, source: str) -> int:
    """Delete one source's chunks and its sync records; return the chunks deleted."""
    deleted = await index.delete_source(source)
    state.forget_source(source)
    return deleted
