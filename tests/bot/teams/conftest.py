"""The Teams adapter over real HTTP: Activity JSON posted to /api/messages, replies received by
a fake Bot Connector service, a fake Anthropic server, in-memory stores and index."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from bot.chat.service import ChatLimits, ChatService
from bot.settings import Settings
from bot.teams import spec as teams_spec
from bot.teams.app import ROUTE, TeamsEndpoint
from bot.teams.auth import auth_configuration
from bot.teams.spec import TeamsSettings
from bot.web import build_web_app
from rag.ports import SearchIndex
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.chat import make_flow
from tests.fakes.http import LocalServer
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.teams_connector import FakeConnector
from tests.rag.builders import make_llm, make_pipeline
from tests.rag.corpus import CHUNKS


class SiftWeb(LocalServer):
    """The `sift serve` web app (health + Teams route) on a free port."""

    def __init__(self, endpoint: TeamsEndpoint) -> None:
        super().__init__()
        self.app = build_web_app({})
        endpoint.mount(self.app)


class TeamsStack:
    """Teams' side of a test: posts activities; the connector shows what Sift sent back."""

    def __init__(self, endpoint: TeamsEndpoint, connector: FakeConnector,
                 stores: MemoryChatStores, anthropic: FakeAnthropic) -> None:
        self.endpoint = endpoint
        self.connector = connector
        self.stores = stores
        self.anthropic = anthropic
        self.web = SiftWeb(endpoint)
        self._session: aiohttp.ClientSession | None = None

    @property
    def service_url(self) -> str:
        return self.connector.service_url

    async def start(self) -> None:
        await self.web.start()
        self._session = aiohttp.ClientSession()

    async def stop(self) -> None:
        await self.endpoint.drain(5)
        await self.endpoint.close()
        if self._session is not None:
            await self._session.close()
        await self.web.stop()

    async def post(self, payload: dict[str, Any],
                   headers: dict[str, str] | None = None) -> tuple[int, Any]:
        assert self._session is not None
        async with self._session.post(self.web.url + ROUTE, json=payload,
                                      headers=headers or {}) as response:
            body = await response.json() if response.content_type == "application/json" \
                else await response.text()
            return response.status, body

    async def settle(self) -> None:
        """Until every answer started so far has been delivered."""
        await self.endpoint.tasks.wait()


def teams_settings(**teams: Any) -> Settings:
    return Settings(host="127.0.0.1", teams=TeamsSettings(**{"enabled": True, **teams}))


@pytest.fixture
async def fake_connector() -> AsyncIterator[FakeConnector]:
    server = FakeConnector()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="session")
async def memory_index(embedder: Any) -> MemoryIndex:
    index = MemoryIndex()
    await index.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    return index


StackFactory = Callable[..., Any]


@pytest.fixture
async def make_stack(fake_connector: FakeConnector, fake_anthropic: FakeAnthropic,
                     embedder: Any, memory_index: MemoryIndex) -> AsyncIterator[StackFactory]:
    """Keywords: index (SearchIndex), limits (ChatLimits), settings, stores, and
    stream_interval_s (0: tests do not wait out Teams' throttle unless they test it)."""
    started: list[TeamsStack] = []

    async def make(*, index: SearchIndex | None = None, limits: ChatLimits | None = None,
                   settings: Settings | None = None, stores: MemoryChatStores | None = None,
                   stream_interval_s: float = 0.0) -> TeamsStack:
        settings = settings or teams_settings()
        stores = stores or MemoryChatStores()
        pipeline = make_pipeline(index or memory_index, embedder, make_llm(fake_anthropic.url),
                                 recorder=stores.interactions)
        service = ChatService(pipeline, stores.chat_stores(), limits or ChatLimits())
        teams = teams_spec.config(settings)
        endpoint = TeamsEndpoint(auth_configuration(teams, settings.host), teams.options,
                                 make_flow(service),
                                 stream_interval_s=stream_interval_s,
                                 max_in_flight=settings.chat.max_in_flight)
        stack = TeamsStack(endpoint, fake_connector, stores, fake_anthropic)
        await stack.start()
        started.append(stack)
        return stack

    yield make
    for stack in started:
        await stack.stop()


@pytest.fixture
async def stack(make_stack: StackFactory) -> TeamsStack:
    return await make_stack()
