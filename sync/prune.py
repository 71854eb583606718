"""Sources the index still holds but the settings no longer name: found, and removed."""

from __future__ import annotations

from collections.abc import Collection

from sync.ports import ChunkIndex, SyncState


async def unconfigured(index: ChunkIndex, state: SyncState,
                       configured: Collection[str]) -> dict[str, int]:
    """Chunk counts of the indexed sources that are not configured (e.g. the sample, once a
    person configures their own): answers would keep citing them otherwise. Only sources
    this deployment's own sync put there count: chunks another writer put in the collection
    (a shared index, an import) are not Sift's to delete."""
    counts = await index.count_by_source()
    ours = state.synced_sources()
    return {name: n for name, n in sorted(counts.items())
            if n and name in ours and name not in configured}


async def prune(index: ChunkIndex, state: SyncState, source: str) -> int:
    """Delete one source's chunks and its sync records; return the chunks deleted."""
    deleted = await index.delete_source(source)
    state.forget_source(source)
    return deleted
