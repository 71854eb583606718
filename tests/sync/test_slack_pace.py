"""Slack's rate tiers: a tier's burst at once, then its pace, per method."""

from __future__ import annotations

import pytest

from sync.connectors.slack_pace import TierPacer


class Clock:
    """Time that moves only when the pacer sleeps (or the test says so)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def test_a_tier_3_method_bursts_fifty_then_waits_its_pace() -> None:
    clock = Clock()
    pacer = TierPacer(clock, clock.sleep)
    for _ in range(50):
        await pacer.wait("conversations.replies")
    assert clock.slept == []  # Slack welcomes a burst
    await pacer.wait("conversations.replies")
    await pacer.wait("conversations.replies")
    assert clock.slept == pytest.approx([1.2, 1.2])  # then 50 a minute


async def test_methods_are_paced_apart_and_a_pause_refills_the_burst() -> None:
    clock = Clock()
    pacer = TierPacer(clock, clock.sleep)
    for _ in range(20):
        await pacer.wait("conversations.list")  # Tier 2
    await pacer.wait("users.info")  # another method's bucket is full
    assert clock.slept == []
    await pacer.wait("conversations.list")
    assert clock.slept == pytest.approx([3.0])  # 20 a minute
    clock.now += 60  # a quiet minute
    for _ in range(20):
        await pacer.wait("conversations.list")
    assert clock.slept == pytest.approx([3.0])
