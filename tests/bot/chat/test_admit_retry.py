"""Admitting a message while the database drops out between the claim and the quota check."""

from __future__ import annotations

from typing import Any

from bot.chat.service import ChatLimits, ChatService
from rag.patience import Patience, Retrying
from tests.fakes.memory_chat_stores import MemoryChatStores, MemoryQuota


class QuotaLostOnce(MemoryQuota):
    """The first check fails as a dropped connection does (after the claim committed)."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 1

    def allow(self, who: str, limit: int, window_s: float) -> bool:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("server closed the connection unexpectedly")
        return super().allow(who, limit, window_s)


def service(stores: MemoryChatStores) -> ChatService:
    retrying = Retrying(Patience(wait_s=2.0, first_s=0.01, cap_s=0.05),
                        lambda exc: isinstance(exc, ConnectionError))
    pipeline: Any = None  # admitting never asks the pipeline
    return ChatService(pipeline, stores.chat_stores(), ChatLimits(quota_per_minute=10), retrying)


async def test_a_retry_after_the_claim_committed_still_admits_the_message() -> None:
    stores = MemoryChatStores(quota=QuotaLostOnce())
    chat = service(stores)
    gate = await chat.admit("slack:Ev1", "U1", "how do I rotate the staging credentials?")
    assert gate.admitted
    assert stores.quota.failures == 0  # the quota check did fail once and was tried again


async def test_a_redelivery_is_still_dropped_after_such_a_retry() -> None:
    stores = MemoryChatStores(quota=QuotaLostOnce())
    chat = service(stores)
    assert (await chat.admit("slack:Ev1", "U1", "a question?")).admitted
    again = await chat.admit("slack:Ev1", "U1", "a question?")
    assert not again.admitted and again.reply is None  # silent: not the person's doing
