"""Slack's per-method rate tiers kept while a source reads: a burst, then the tier's pace."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

# Requests a minute each method's tier allows an internal (customer-built) or Marketplace app,
# from Slack's method reference; others' conversations.history and .replies are far lower
# since 2025 (docs/connectors/slack.md says which apps are which).
PER_MINUTE = {
    "conversations.history": 50, "conversations.replies": 50, "conversations.info": 50,
    "bots.info": 50,  # Tier 3
    "conversations.list": 20,  # Tier 2
    "conversations.members": 100, "users.info": 100, "users.lookupByEmail": 100,
    "auth.test": 100,  # Tier 4 (auth.test is "special", and generous)
}
DEFAULT_PER_MINUTE = 20  # Tier 2, where most methods are


class TierPacer:
    """A token bucket per method: a tier's worth of calls at once (Slack welcomes sporadic
    bursts), then one call per 60/N seconds, so a long run meets few 429s to wait out."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], object] = asyncio.sleep) -> None:
        self._clock, self._sleep = clock, sleep
        self._buckets: dict[str, tuple[float, float]] = {}  # method -> (tokens, at)

    async def wait(self, method: str) -> None:
        rate = PER_MINUTE.get(method, DEFAULT_PER_MINUTE)
        now = self._clock()
        tokens, at = self._buckets.get(method, (float(rate), now))
        tokens = min(float(rate), tokens + (now - at) * rate / 60)
        if tokens < 1:
            delay = (1 - tokens) * 60 / rate
            await self._sleep(delay)  # type: ignore[misc]
            now, tokens = now + delay, 1.0
        self._buckets[method] = (tokens - 1, now)
