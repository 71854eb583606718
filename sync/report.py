"""What a sync run reports: counts, errors, per-phase timings, and a progress callback."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from sync.ports import RunCounts

T = TypeVar("T")
PHASES = ("read", "chunk", "embed", "write", "state")


class Progress(Protocol):
    """Told as documents are handled and chunks written (the CLI draws bars from it)."""

    def documents(self, count: int) -> None: ...

    def chunks(self, count: int) -> None: ...


class NoProgress:
    def documents(self, count: int) -> None:
        return None

    def chunks(self, count: int) -> None:
        return None


@dataclass
class Timers:
    """Cumulative seconds per phase; cheap enough to stay on in production."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - started

    async def iterate(self, name: str, items: AsyncIterator[T]) -> AsyncIterator[T]:
        """Re-yield `items`, charging the time spent waiting for each one to `name`."""
        while True:
            started = time.perf_counter()
            try:
                item = await anext(items)
            except StopAsyncIteration:
                self.seconds[name] += time.perf_counter() - started
                return
            self.seconds[name] += time.perf_counter() - started
            yield item


@dataclass
class Tally:
    """Mutable counts during a run; frozen into RunCounts at the end."""

    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0
    chunks_written: int = 0

    def freeze(self) -> RunCounts:
        return RunCounts(self.added, self.updated, self.deleted, self.unchanged, self.failed,
                         self.chunks_written)


@dataclass(frozen=True)
class SyncSummary:
    source: str
    counts: RunCounts
    seconds: float
    full: bool = False
    dry_run: bool = False
    errors: tuple[str, ...] = ()
    phases: dict[str, float] = field(default_factory=dict)
    chunks_embedded: int = 0
    warnings: tuple[str, ...] = ()  # indexed but needing a fix (a bad or unknown `access`)

    def as_json(self) -> dict[str, Any]:
        """The `sift sync --json` line: exactly these keys, in this order."""
        c = self.counts
        return {"source": self.source, "added": c.added, "updated": c.updated,
                "deleted": c.deleted, "unchanged": c.unchanged, "failed": c.failed,
                "chunks_written": c.chunks_written, "seconds": round(self.seconds, 3)}

    def phase_shares(self) -> dict[str, float]:
        """Each phase's share of the wall time, with the remainder as `other`."""
        total = self.seconds or 1.0
        shares = {k: v / total for k, v in self.phases.items()}
        shares["other"] = max(0.0, 1.0 - sum(shares.values()))
        return shares
