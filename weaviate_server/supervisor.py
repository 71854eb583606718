"""Keeps the Weaviate that `sift serve` started alive: restarts with backoff, reports health."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from rag.errors import RetrievalError
from weaviate_server.process import ManagedWeaviate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProcessHealth:
    """Whether the managed process is up; `sift serve` shows it under /healthz."""

    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class Backoff:
    first_s: float = 1.0
    max_s: float = 60.0

    def after(self, failures: int) -> float:
        return min(self.first_s * 2 ** max(failures - 1, 0), self.max_s)


class WeaviateSupervisor:
    """Polls the managed process; when it has exited, starts it again (waiting longer after
    each failed start), logging every restart. `health` says whether it is up."""

    def __init__(self, managed: ManagedWeaviate, start_timeout_s: float,
                 poll_s: float = 1.0, backoff: Backoff | None = None) -> None:
        self._managed = managed
        self._start_timeout_s = start_timeout_s
        self._poll_s = poll_s
        self._backoff = backoff or Backoff()
        self._task: asyncio.Task[None] | None = None
        self.restarts = 0
        self._down_since: float | None = None
        self._last_error = ""

    def start(self) -> None:
        self._task = asyncio.create_task(self._watch(), name="weaviate-supervisor")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def health(self) -> ProcessHealth:
        if self._down_since is not None:
            down = time.monotonic() - self._down_since
            return ProcessHealth(False, f"the managed Weaviate exited {down:.0f}s ago and is "
                                 f"being restarted (restarts so far: {self.restarts})"
                                 f"{self._last_error}")
        return ProcessHealth(True, f"managed process, restarts: {self.restarts}")

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._poll_s)
            code = self._managed.exit_code()
            if code is not None:
                await self._restart(code)

    async def _restart(self, code: int) -> None:
        self._down_since = time.monotonic()
        log.error("Weaviate exited (status %s); restarting it (log: %s)", code,
                  self._managed.log_file)
        failures = 0
        while True:
            try:
                pid = await asyncio.to_thread(self._managed.start, self._start_timeout_s)
            except RetrievalError as exc:
                failures += 1
                wait = self._backoff.after(failures)
                self._last_error = f"; last attempt: {exc.user_message}"
                log.error("Weaviate restart %d failed; next attempt in %.0fs: %s",
                          failures, wait, exc)
                await asyncio.sleep(wait)
                continue
            self.restarts += 1
            self._down_since, self._last_error = None, ""
            log.warning("Weaviate restarted (pid %d, restart %d)", pid, self.restarts)
            return
