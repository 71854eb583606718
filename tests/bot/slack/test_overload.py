"""A flood bounded: over `chat.max_in_flight`, events are left for Slack to deliver again and
people who clicked or typed /sift are told at once; nothing is lost."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from bot.chat.tasks import Background, Busy
from rag import messages
from tests.bot.slack.conftest import QUESTION, StackFactory, all_text
from tests.fakes.memory_index import GatedIndex, MemoryIndex
from tests.fakes.slack_payloads import BOT_USER, CHANNEL, USER, app_mention, slash_command

FIRST_TS, SECOND_TS = "1700000000.000100", "1700000000.000200"


async def until(condition: Any, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


async def test_background_refuses_work_over_its_limit_and_takes_it_again_later() -> None:
    release = asyncio.Event()
    done: list[str] = []

    async def work(name: str) -> None:
        await release.wait()
        done.append(name)

    tasks = Background("test", limit=2)
    tasks.spawn(work("a"))
    tasks.spawn(work("b"))
    refused = work("c")
    try:
        tasks.spawn(refused)
        raise AssertionError("a third task was started over the limit of two")
    except Busy:
        pass
    # closed, so it never runs and never warns "coroutine ... was never awaited"
    assert inspect.getcoroutinestate(refused) == inspect.CORO_CLOSED
    release.set()
    await tasks.wait()
    tasks.spawn(work("d"))
    await tasks.wait()
    assert sorted(done) == ["a", "b", "d"]


async def test_an_event_over_the_limit_is_delivered_again_and_answered_once(
        make_stack: StackFactory, memory_index: MemoryIndex) -> None:
    gate = asyncio.Event()
    index = GatedIndex(memory_index, gate)
    stack = await make_stack(index=index, max_in_flight=1)
    first = app_mention(f"<@{BOT_USER}> {QUESTION}", ts=FIRST_TS, event_id="EvOver1")
    second = app_mention(f"<@{BOT_USER}> How do I set up the VPN?", ts=SECOND_TS,
                         event_id="EvOver2")
    for payload in (first, second):
        stack.slack.add_message(CHANNEL, USER, payload["event"]["text"], payload["event"]["ts"])

    assert (await stack.driver.event(first)).status == 200
    await until(lambda: index.waiting == 1)
    refused = await stack.driver.event(second)
    assert refused.status != 200  # not acknowledged: Slack delivers it again

    gate.set()
    await stack.driver.settle()
    again = await stack.driver.event(second, retry_num=1)  # Slack's redelivery, same event id
    assert again.status == 200
    await stack.driver.settle()
    answers = stack.slack.calls_to("chat.postMessage")
    assert sorted(a.args["thread_ts"] for a in answers) == [FIRST_TS, SECOND_TS]


async def test_a_command_over_the_limit_tells_the_person_at_once(
        make_stack: StackFactory, memory_index: MemoryIndex) -> None:
    gate = asyncio.Event()
    index = GatedIndex(memory_index, gate)
    stack = await make_stack(index=index, max_in_flight=1)
    stack.slack.add_message(CHANNEL, USER, f"<@{BOT_USER}> {QUESTION}", FIRST_TS)
    assert (await stack.driver.event(app_mention(f"<@{BOT_USER}> {QUESTION}", ts=FIRST_TS,
                                                 event_id="EvCmd1"))).status == 200
    await until(lambda: index.waiting == 1)

    acked = await stack.driver.command(slash_command("How do I set up the VPN?"))
    assert acked.status == 200  # a command is not delivered again: it is answered now
    [busy] = await stack.slack.wait_for("chat.postEphemeral")
    assert busy.args["user"] == USER and messages.BUSY in all_text(busy)

    gate.set()
    await stack.driver.settle()
    assert len(stack.slack.calls_to("chat.postMessage")) == 1  # the first question only
    assert index.waiting == 1  # the refused command never reached the search
