"""An answer begun before the last grades are in, kept only if the selection stands.

The slowest of twenty grading calls sets when the answer may start. With
`GradingConfig.early_answer_share` below 1 (it is 1, off, by default: bench/README.md), once
that share of the scores is in, the answer is begun from what those select; its text is
held back. When every grade is in, the selection is made again: the same excerpts in the same
order keep the answer already under way (its text is shown from then on), anything else
cancels it and the answer is written from the final selection. So an answer is never written
from candidates the final grades did not select, and it starts up to the slowest calls' lead
earlier.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from rag.ports import TextSink
from rag.types import Candidate

log = logging.getLogger(__name__)

T = TypeVar("T")


class HeldPreview:
    """A preview sink that keeps the latest text until it is opened, then passes it on."""

    def __init__(self, sink: TextSink) -> None:
        self._sink = sink
        self._open = False
        self._latest: str | None = None

    async def show(self, text: str) -> None:
        if self._open:
            await self._sink(text)
        else:
            self._latest = text  # the text so far: only the newest is worth showing

    async def open(self) -> None:
        self._open = True
        if self._latest is not None:
            await self._sink(self._latest)


def chosen_ids(chosen: Sequence[Candidate]) -> tuple[str, ...]:
    return tuple(c.chunk.chunk_id for c in chosen)


class EarlyAnswer(Generic[T]):
    """An answer being written from an early selection."""

    def __init__(self, chosen: Sequence[Candidate],
                 write: Callable[[TextSink | None], Awaitable[T]],
                 preview: TextSink | None) -> None:
        self.chosen = chosen_ids(chosen)
        self._held = HeldPreview(preview) if preview is not None else None

        async def run() -> T:
            return await write(self._held.show if self._held is not None else None)

        self._task: asyncio.Task[T] = asyncio.create_task(run())

    async def take(self, final: Sequence[Candidate]) -> T | None:
        """The answer, when the final selection is the early one; otherwise None (and the
        early answer is cancelled)."""
        if chosen_ids(final) != self.chosen:
            log.info("early answer dropped: the last grades changed the selection")
            await self.drop()
            return None
        log.info("early answer kept: the last grades left the selection as it was")
        if self._held is not None:
            await self._held.open()
        return await self._task

    async def drop(self) -> None:
        """Cancel it (a no-op once taken)."""
        if not self._task.done():
            self._task.cancel()
        # Its outcome is not wanted any more: a failure of the discarded call is not the
        # answer's (the answer written instead reports its own).
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
