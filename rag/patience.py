"""Bounded retries with backoff while a dependency is away for a moment (a restart, a failover)."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class Patience:
    """How long to keep trying after the first failure: pauses start at `first_s`, double up
    to `cap_s` (with jitter, so that many waiting calls do not return in step), and the last
    try starts no later than `wait_s` after the first failure. `wait_s=0`: no retry at all."""

    wait_s: float
    first_s: float = 0.25
    cap_s: float = 2.0

    def pause(self, attempt: int, left_s: float) -> float:
        step = min(self.cap_s, self.first_s * 2 ** attempt)
        return max(0.0, min(left_s, random.uniform(step / 2, step)))


@dataclass(frozen=True)
class Retrying:
    """Calls to one dependency: a failure `transient` says waiting can mend is tried again,
    patiently; any other failure, or one past the bound, is raised. Every retry and the
    give-up are logged (the correlation id of the question or vote rides along)."""

    patience: Patience
    transient: Callable[[BaseException], bool]

    async def call(self, what: str, make: Callable[[], Awaitable[T]]) -> T:
        deadline: float | None = None
        attempt = 0
        while True:
            try:
                return await make()
            except Exception as exc:
                if not self.transient(exc):
                    raise
                now = time.monotonic()
                deadline = now + self.patience.wait_s if deadline is None else deadline
                if now >= deadline:
                    if attempt:
                        log.error("%s: still failing after %.0fs, giving up: %s", what,
                                  self.patience.wait_s, _first_line(exc))
                    raise
                pause = self.patience.pause(attempt, deadline - now)
                log.warning("%s failed (%s); trying again in %.1fs", what, _first_line(exc),
                            pause)
                await asyncio.sleep(pause)
                attempt += 1

    async def blocking(self, what: str, fn: Callable[P, T], *args: P.args,
                       **kwargs: P.kwargs) -> T:
        """A blocking call (a database write) on a worker thread, retried the same way; the
        pauses are spent on the event loop, so waiting calls hold no thread."""
        return await self.call(what, lambda: asyncio.to_thread(fn, *args, **kwargs))


NO_RETRY = Retrying(Patience(0), lambda _: False)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
