"""Bounded retries with backoff while a dependency is away for a moment (a restart, a failover)."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


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


async def patiently(call: Callable[[], Awaitable[T]], *, transient: Callable[[BaseException],
                    bool], patience: Patience, what: str) -> T:
    """`call()`, again after a pause each time it fails in a way `transient` says waiting can
    mend, until `patience.wait_s` has passed; then (or for any other failure) its error is
    raised. Every retry and the final give-up are logged (the correlation id rides along)."""
    deadline: float | None = None
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            if not transient(exc):
                raise
            now = time.monotonic()
            deadline = now + patience.wait_s if deadline is None else deadline
            if now >= deadline:
                if attempt:
                    log.error("%s: still failing after %.0fs, giving up: %s", what,
                              patience.wait_s, _first_line(exc))
                raise
            pause = patience.pause(attempt, deadline - now)
            log.warning("%s failed (%s); trying again in %.1fs", what, _first_line(exc), pause)
            await asyncio.sleep(pause)
            attempt += 1


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
