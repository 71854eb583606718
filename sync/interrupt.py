"""Stopping a sync cleanly: SIGINT/SIGTERM ask it to stop at the next batch boundary."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rag.errors import SyncError

log = logging.getLogger(__name__)


class SyncInterrupted(SyncError):
    user_message = ("The sync was interrupted; what it finished is kept, and the next run "
                    "continues from there.")


class StopRequest:
    """Set from a signal handler; the job looks at it between batches."""

    def __init__(self) -> None:
        self.reason = ""

    @property
    def requested(self) -> bool:
        return bool(self.reason)

    def set(self, reason: str) -> None:
        self.reason = self.reason or reason

    def check(self, source: str) -> None:
        if self.requested:
            raise SyncInterrupted(f"sync of {source} interrupted by {self.reason}")


@asynccontextmanager
async def stop_on_signals() -> AsyncIterator[StopRequest]:
    """While inside, SIGINT/SIGTERM request a clean stop; a second one cancels the run now."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    request = StopRequest()

    def on_signal(sig: signal.Signals) -> None:
        if request.requested and task is not None:
            log.warning("%s again: stopping now", sig.name)
            task.cancel()
            return
        log.warning("%s: stopping the sync after the current batch (again to stop now)",
                    sig.name)
        request.set(sig.name)

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        # Only the main thread may handle signals; elsewhere (a test's or a host's thread)
        # the sync runs without, as before.
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)
    try:
        yield request
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
