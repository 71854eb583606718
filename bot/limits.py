"""Per-user question quota: a sliding one-minute window, kept in memory per process."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable


class Quota:
    """Allows `limit` questions per user per `window_s`; pure apart from the injected clock."""

    def __init__(self, limit: int, window_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = limit
        self._window = window_s
        self._clock = clock
        self._seen: dict[str, deque[float]] = {}

    @property
    def limit(self) -> int:
        return self._limit

    def allow(self, user: str) -> bool:
        now = self._clock()
        times = self._seen.setdefault(user, deque())
        while times and now - times[0] >= self._window:
            times.popleft()
        if len(times) >= self._limit:
            return False
        times.append(now)
        return True
