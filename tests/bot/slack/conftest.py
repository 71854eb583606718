"""The Slack adapter over real HTTP: fake Slack and Anthropic servers, in-memory stores, and
the helpers the adapter tests share."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator

from bot.app import App
from bot.chat.service import ChatLimits, ChatService
from bot.settings import ChatSettings, Settings
from bot.slack import spec as slack_spec
from bot.slack.app import SlackAdapter, build_slack_adapter
from bot.slack.spec import APPEND_EVERY_S, SlackSettings
from rag.llm import AnthropicLLM
from rag.ports import SearchIndex
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.chat import make_flow
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.slack_driver import SiftWeb, SlackDriver
from tests.fakes.slack_payloads import BOT_TOKEN, BOT_USER, SIGNING_SECRET
from tests.fakes.slack_server import Call, FakeSlack
from tests.rag.builders import make_llm, make_pipeline
from tests.rag.corpus import CHUNKS


def slack_settings(api_url: str, *, max_in_flight: int = 500, **slack: Any) -> Settings:
    return Settings(slack_bot_token=BOT_TOKEN, slack_signing_secret=SIGNING_SECRET,
                    slack_api_url=api_url, slack=SlackSettings(**slack),
                    chat=ChatSettings(max_in_flight=max_in_flight))


@pytest.fixture(scope="session")
async def memory_index(embedder: Any) -> MemoryIndex:
    index = MemoryIndex()
    await index.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    return index


class SlackStack:
    """What a test reaches for: the driver (Slack's side), the fakes, the stores."""

    def __init__(self, driver: SlackDriver, stores: MemoryChatStores,
                 anthropic: FakeAnthropic) -> None:
        self.driver = driver
        self.slack = driver.slack
        self.stores = stores
        self.anthropic = anthropic


StackFactory = Callable[..., Any]


@pytest.fixture
async def make_stack(fake_slack: FakeSlack, fake_anthropic: FakeAnthropic, embedder: Any,
                     memory_index: MemoryIndex) -> AsyncIterator[StackFactory]:
    """Builds a stack; keywords: index (SearchIndex), limits (ChatLimits), append_every_s
    (live answers), max_in_flight (ChatSettings), SlackSettings."""
    started: list[tuple[SlackDriver, SiftWeb, SlackAdapter]] = []
    llms: list[AnthropicLLM] = []

    async def make(*, index: SearchIndex | None = None, limits: ChatLimits | None = None,
                   append_every_s: float = APPEND_EVERY_S, max_in_flight: int = 500,
                   **slack: Any) -> SlackStack:
        stores = MemoryChatStores()
        llms.append(make_llm(fake_anthropic.url))
        pipeline = make_pipeline(index or memory_index, embedder, llms[-1],
                                 recorder=stores.interactions)
        service = ChatService(pipeline, stores.chat_stores(), limits or ChatLimits())
        settings = slack_settings(fake_slack.api_url, max_in_flight=max_in_flight, **slack)
        slack_config = slack_spec.config(settings)
        flow = make_flow(service, follow_ups=slack_config.options.follow_ups_without_mention)
        adapter = build_slack_adapter(slack_config, App(settings).around(flow),
                                      interval=FixedValueRetryIntervalCalculator(0.0),
                                      append_every_s=append_every_s)
        driver, web = await SlackDriver.for_adapter(fake_slack, adapter)
        started.append((driver, web, adapter))
        return SlackStack(driver, stores, fake_anthropic)

    yield make
    for driver, web, adapter in started:
        await adapter.drain(5)
        await adapter.close()
        await driver.stop()
        await web.stop()
    for llm in llms:
        await llm.close()


@pytest.fixture
async def stack(make_stack: StackFactory) -> SlackStack:
    return await make_stack()


QUESTION = "How do I rotate the staging database credentials?"
Q_TS = "1700000000.000100"
LOUD = re.compile(r"<!(channel|here|everyone)|<@U|<!subteam")


def all_text(call: Call) -> str:
    """Everything a message call would show: fallback text, blocks, streamed chunks."""
    return json.dumps([call.args.get("text"), call.args.get("blocks"),
                       call.args.get("chunks"), call.args.get("markdown_text")])


def blocks_of(call: Call) -> list[dict[str, Any]]:
    blocks = call.args.get("blocks") or []
    return json.loads(blocks) if isinstance(blocks, str) else blocks


def is_error_notice(text: str) -> str | None:
    found = re.search(r"\(reference: ([0-9a-f]{8})\)", text)
    return found.group(1) if found else None


async def ask_in_channel(stack: SlackStack, text: str = QUESTION, ts: str = Q_TS) -> Call:
    await stack.driver.mention(f"<@{BOT_USER}> {text}", ts=ts)
    await stack.driver.settle()
    return stack.slack.calls_to("chat.postMessage")[-1]
