"""An in-memory stand-in for storage.expiring.ExpiringStore (values that expire), for flow tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class MemoryExpiring:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.values: dict[str, tuple[dict[str, Any], float]] = {}

    def put(self, key: str, value: dict[str, Any], ttl_s: float) -> None:
        self.values[key] = (dict(value), self.clock() + ttl_s)

    def get(self, key: str) -> dict[str, Any] | None:
        found = self.values.get(key)
        return dict(found[0]) if found and found[1] > self.clock() else None

    def take(self, key: str) -> dict[str, Any] | None:
        found = self.get(key)
        self.values.pop(key, None)
        return found
