"""A small time-to-live cache: identity lookups are remembered briefly, never forever."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")
MAX_ENTRIES = 10_000


class TtlCache(Generic[V]):
    """Values expire `ttl_s` after they were stored; `clock` is injectable for tests."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl_s
        self._clock = clock
        self._items: dict[Hashable, tuple[float, V]] = {}

    def get(self, key: Hashable) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        if self._clock() >= item[0]:
            del self._items[key]
            return None
        return item[1]

    def put(self, key: Hashable, value: V) -> None:
        if self._ttl <= 0:
            return
        if len(self._items) >= MAX_ENTRIES:  # a bound, so a flood of ids cannot grow memory
            self._items.clear()
        self._items[key] = (self._clock() + self._ttl, value)
