"""How replies reach Teams: connector retries, streaming and its fallbacks, refusals, failures."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from bot.chat.service import ChatLimits
from bot.settings import ChatSettings, Settings
from bot.teams.spec import TeamsSettings
from rag import messages
from tests.bot.teams.conftest import StackFactory, TeamsStack, teams_settings
from tests.fakes import teams_payloads as p
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import GatedIndex, MemoryIndex


def personal(stack: TeamsStack, text: str, **kw: Any) -> dict[str, Any]:
    return p.personal_message(stack.service_url, text, **kw)


def channel(stack: TeamsStack, text: str, **kw: Any) -> dict[str, Any]:
    return p.channel_mention(stack.service_url, text, **kw)


async def test_throttled_reply_is_retried_after_retry_after(stack: TeamsStack) -> None:
    stack.connector.fail_next(429, retry_after="1", times=2)  # the typing indicator, then again
    started = time.monotonic()
    await stack.post(channel(stack, "how do I set up the VPN?"))
    [reply] = await stack.connector.wait_for_messages(1)
    assert reply.text.startswith("Follow the documented procedure")
    assert len(stack.connector.refused) == 2
    assert stack.connector.received[0].at - started >= 2.0  # waited as told, twice


@pytest.mark.parametrize("status", [412, 502, 504])
async def test_transient_connector_errors_are_retried(stack: TeamsStack, status: int) -> None:
    stack.connector.fail_next(status)
    await stack.post(channel(stack, "how do I set up the VPN?"))
    [reply] = await stack.connector.wait_for_messages(1)
    assert [r.body["type"] for r in stack.connector.refused] == ["typing"]
    assert reply.body["replyToId"]


async def test_a_reply_the_connector_keeps_refusing_is_logged(
        make_stack: StackFactory, caplog: pytest.LogCaptureFixture) -> None:
    stack = await make_stack(settings=teams_settings(streaming=False, send_retries=1,
                                                     retry_max_wait_s=0.01))
    stack.connector.fail_next(403, times=10)
    await stack.post(personal(stack, "how do I set up the VPN?"))
    await stack.settle()
    assert stack.connector.messages == []
    assert "could not send the error message" in caplog.text


async def test_refused_stream_falls_back_to_one_message(stack: TeamsStack) -> None:
    stack.connector.fail_next(400)  # "BadArgument: streaming api is not enabled"
    await stack.post(personal(stack, "how do I set up the VPN?"))
    [reply] = await stack.connector.wait_for_messages(1)
    assert reply.stream_info is None
    assert reply.entities("https://schema.org/Message")


async def test_streaming_off_sends_typing_then_one_message(make_stack: StackFactory) -> None:
    stack = await make_stack(settings=teams_settings(streaming=False))
    await stack.post(personal(stack, "how do I set up the VPN?"))
    [reply] = await stack.connector.wait_for_messages(1)
    assert reply.stream_info is None
    assert stack.connector.received[0].type == "typing"


async def test_clients_without_citation_entities_get_a_source_list(stack: TeamsStack) -> None:
    payload = personal(stack, "how do I set up the VPN?")
    payload["channelId"] = "emulator"
    await stack.post(payload)
    [reply] = await stack.connector.wait_for_messages(1)
    assert f"**{messages.SOURCES_HEADING}**" in reply.text
    assert "[Setting up the VPN](https://wiki.example/vpn)" in reply.text
    assert reply.entities("https://schema.org/Message")[0].get("citation") is None
    assert reply.stream_info is None  # Teams streams; the Emulator gets one message


async def test_too_long_message_is_refused_politely(make_stack: StackFactory) -> None:
    stack = await make_stack(limits=ChatLimits(max_message_chars=20))
    await stack.post(personal(stack, "x" * 30))
    [reply] = await stack.connector.wait_for_messages(1)
    assert reply.text == messages.TOO_LONG.format(length=30, limit=20)
    assert stack.stores.interactions.rows == {} and stack.anthropic.requests == []


async def test_quota_applies_per_person(make_stack: StackFactory) -> None:
    stack = await make_stack(limits=ChatLimits(quota_per_minute=1))
    await stack.post(personal(stack, "how do I set up the VPN?"))
    await stack.post(personal(stack, "and the holidays?"))
    await stack.post(personal(stack, "and the holidays?", sender=p.user(2)))
    await stack.connector.wait_for_messages(3)
    await stack.settle()
    texts = [r.text for r in stack.connector.messages]
    assert texts.count(messages.QUOTA_EXCEEDED.format(limit=1)) == 1
    assert len(stack.stores.interactions.rows) == 2


async def test_mention_alone_asks_for_a_question(stack: TeamsStack) -> None:
    await stack.post(channel(stack, ""))
    [reply] = await stack.connector.wait_for_messages(1)
    assert reply.text == messages.EMPTY_QUESTION


class BrokenDedupe:
    def claim(self, key: str, ttl_s: float) -> bool:
        raise OSError("database is locked")


async def test_unexpected_failure_ends_in_a_message_with_a_reference(
        make_stack: StackFactory, caplog: pytest.LogCaptureFixture) -> None:
    stores = MemoryChatStores()
    stores.dedupe = BrokenDedupe()  # type: ignore[assignment]
    stack = await make_stack(stores=stores)
    status, _ = await stack.post(channel(stack, "how do I set up the VPN?"))
    assert status == 202
    [reply] = await stack.connector.wait_for_messages(1)
    assert reply.text.startswith(messages.INTERNAL_ERROR + " (reference: ")
    assert "database is locked" in caplog.text
    assert "database is locked" not in reply.text


async def test_a_message_over_the_limit_is_told_to_ask_again(make_stack: StackFactory,
                                                             memory_index: MemoryIndex) -> None:
    gate = asyncio.Event()
    index = GatedIndex(memory_index, gate)
    settings = Settings(host="127.0.0.1", teams=TeamsSettings(enabled=True, streaming=False),
                        chat=ChatSettings(max_in_flight=1))
    stack = await make_stack(index=index, settings=settings)
    await stack.post(personal(stack, "how do I set up the VPN?"))
    async with asyncio.timeout(10):
        while index.waiting < 1:
            await asyncio.sleep(0.01)

    await stack.post(personal(stack, "how do I rotate the staging database credentials?"))
    # Teams does not deliver a message again, so the person hears it in that turn.
    [busy] = await stack.connector.wait_for_messages(1)
    assert messages.BUSY in busy.text
    gate.set()
    await stack.settle()
    texts = [m.text for m in stack.connector.messages]
    assert len(texts) == 2 and texts[1].startswith("Follow the documented procedure")
    assert index.waiting == 1  # the refused message never reached the search
