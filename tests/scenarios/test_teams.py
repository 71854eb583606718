"""Teams end to end through `sift serve`: real Weaviate, SQLite, the real /api/messages route;
Teams' side is played by Activity JSON posts and a fake Bot Connector, Claude by a fake."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr
from sqlalchemy import select

from bot.app import App
from bot.server import serve
from bot.settings import Settings, WeaviateSettings
from bot.weaviate.process import ManagedWeaviate, free_port, free_ports
from rag import messages
from rag.embed import LocalEmbedder
from rag.errors import ConfigError, RetrievalError
from rag.index import WeaviateIndex
from storage.models import Feedback, Interaction
from tests.conftest import index_config, unique_collection
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.teams_connector import FakeConnector
from tests.rag.corpus import CHUNKS

pytestmark = pytest.mark.weaviate


class ServedSift:
    """`sift serve` running in this event loop, with Teams' side of the conversation."""

    def __init__(self, app: App, connector: FakeConnector) -> None:
        self.app = app
        self.connector = connector
        self.url = f"http://127.0.0.1:{app.settings.port}/api/messages"
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        started = asyncio.Event()
        self._task = asyncio.create_task(serve(self.app, started=started, stop=self._stop))
        done, _ = await asyncio.wait([self._task, asyncio.create_task(started.wait())],
                                     return_when=asyncio.FIRST_COMPLETED, timeout=120)
        if self._task in done:
            self._task.result()  # serve failed: raise its error here

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task

    async def post(self, payload: dict[str, Any],
                   headers: dict[str, str] | None = None) -> int:
        async with aiohttp.ClientSession() as session, session.post(
                self.url, json=payload, headers=headers or {}) as response:
            return response.status

    def rows(self, model: Any) -> list[Any]:
        with self.app.database.read() as session:
            return list(session.scalars(select(model).order_by(model.id)))

    async def rows_when(self, model: Any, count: int, timeout_s: float = 20) -> list[Any]:
        """Replies are sent before their links are stored: wait for the database too."""
        for _ in range(int(timeout_s * 10)):
            rows = await asyncio.to_thread(self.rows, model)
            if len(rows) >= count and all(getattr(r, "message_ref", "x") for r in rows):
                return rows
            await asyncio.sleep(0.1)
        raise AssertionError(f"expected {count} {model.__name__} rows")


def settings_for(tmp_path: Path, weaviate: ManagedWeaviate, collection: str,
                 anthropic: FakeAnthropic, **kw: Any) -> Settings:
    return Settings(
        data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'sift.db'}",
        weaviate_url=weaviate.url, weaviate_api_key=SecretStr(weaviate.api_key),
        weaviate=WeaviateSettings(grpc_url=f"127.0.0.1:{weaviate.ports.grpc}",
                                  collection=collection),
        anthropic_api_key=SecretStr("sk-test-key"), anthropic_base_url=anthropic.url,
        host="127.0.0.1", port=free_port(), sources=[], **kw)


Serve = Callable[..., Awaitable[ServedSift]]


@pytest.fixture
async def fake_connector() -> AsyncIterator[FakeConnector]:
    server = FakeConnector()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def corpus(weaviate_server: ManagedWeaviate, embedder: LocalEmbedder
                 ) -> AsyncIterator[str]:
    """A fresh collection holding the test corpus; its name."""
    name = unique_collection("Teams")
    index = WeaviateIndex(index_config(weaviate_server, name), embedder.name, embedder.dimension)
    await index.connect()
    await index.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    yield name
    await index.drop()
    await index.close()


@pytest.fixture
async def make_served(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,
                      embedder: LocalEmbedder, fake_anthropic: FakeAnthropic,
                      fake_connector: FakeConnector) -> AsyncIterator[Serve]:
    running: list[ServedSift] = []

    async def make(weaviate: ManagedWeaviate | None = None, **kw: Any) -> ServedSift:
        app = App(settings_for(tmp_path, weaviate or weaviate_server, corpus, fake_anthropic,
                               **kw))
        app.__dict__["embedder"] = embedder  # the session's model, instead of loading another
        served = ServedSift(app, fake_connector)
        await served.start()
        running.append(served)
        return served

    yield make
    for served in running:
        await served.stop()


async def test_channel_mention_answered_in_thread_and_feedback_stored(
        make_served: Serve) -> None:
    sift = await make_served()
    url = sift.connector.service_url
    assert await sift.post(p.channel_mention(url, "how do I set up the VPN?",
                                             activity_id="1700000000011",
                                             root_id="1700000000010")) == 202
    [reply] = await sift.connector.wait_for_messages(1)
    assert reply.conversation_id == f"{p.CHANNEL};messageid=1700000000010"
    assert reply.reply_to == "1700000000011"
    [ai] = reply.entities("https://schema.org/Message")
    names = [c["appearance"]["name"] for c in ai["citation"]]
    assert "Setting up the VPN" in names
    [row] = await sift.rows_when(Interaction, 1)
    assert (row.platform, row.message_channel, row.message_ref, row.thread) == (
        "teams", p.CHANNEL, reply.id, "1700000000010")

    user = p.user()["aadObjectId"]
    conversation = p.channel_conversation("1700000000010")
    assert await sift.post(p.feedback_invoke(url, conversation, reply.id, "dislike",
                                             "Which profile?")) == 200
    [vote] = sift.rows(Feedback)
    assert (vote.user_id, vote.vote, vote.channel, vote.comment) == (
        user, -1, "button", "Which profile?")

    channel = {"isGroup": True, "conversationType": "channel", "id": p.CHANNEL}
    await sift.post(p.reaction(url, channel, reply.id, added=("like",), sender=p.user(2)))
    assert sift.app.feedback.votes(row.id) == {user: -1, p.user(2)["aadObjectId"]: 1}
    await sift.post(p.reaction(url, channel, reply.id, removed=("like",), sender=p.user(2)))
    assert sift.app.feedback.votes(row.id) == {user: -1}


async def test_personal_follow_up_uses_stored_history_and_duplicates_are_dropped(
        make_served: Serve, fake_anthropic: FakeAnthropic) -> None:
    sift = await make_served()
    url = sift.connector.service_url
    first = p.personal_message(url, "how do I set up the VPN?", activity_id="1700000000021")
    assert await sift.post(first) == 202
    assert await sift.post(first) == 202  # Teams redelivers
    [answer] = await sift.connector.wait_for_messages(1)
    await sift.rows_when(Interaction, 1)
    await sift.post(p.personal_message(url, "and on macOS?", activity_id="1700000000022"))
    await sift.connector.wait_for_messages(2)
    understand = fake_anthropic.calls("understand")[-1].body["messages"][-1]["content"]
    assert "how do I set up the VPN?" in understand and answer.text in understand
    await sift.rows_when(Interaction, 2)
    assert len(sift.rows(Interaction)) == 2
    assert len(sift.connector.messages) == 2


async def test_credentials_configured_and_no_token_is_401(make_served: Serve) -> None:
    sift = await make_served(teams_app_id=p.BOT_APP_ID, teams_tenant_id=p.TENANT,
                             teams_app_password=SecretStr("not-a-real-secret"))
    payload = p.channel_mention(sift.connector.service_url, "how do I set up the VPN?")
    assert await sift.post(payload) == 401
    assert await sift.post(payload, {"Authorization": "Bearer abc.def.ghi"}) == 401
    await asyncio.sleep(0.5)
    assert sift.connector.received == [] and sift.rows(Interaction) == []


@pytest.mark.parametrize(("kw", "named"), [
    ({"host": "0.0.0.0"}, "SIFT_TEAMS_APP_ID and SIFT_TEAMS_APP_PASSWORD are not set"),
    ({"host": "0.0.0.0", "teams_app_id": p.BOT_APP_ID}, "SIFT_TEAMS_TENANT_ID is not"),
])
async def test_unusable_teams_settings_refuse_to_start(tmp_path: Path, kw: dict[str, Any],
                                                       named: str) -> None:
    app = App(Settings(data_dir=tmp_path, port=free_port(), **kw))
    with pytest.raises(ConfigError, match=named):
        await serve(app, stop=asyncio.Event())
    assert not (tmp_path / "sift.db").exists()  # refused before starting anything


@pytest.mark.slow
async def test_weaviate_down_gives_a_clear_message(
        make_served: Serve, tmp_path_factory: pytest.TempPathFactory,
        weaviate_server: ManagedWeaviate) -> None:
    own = ManagedWeaviate(weaviate_server.binary, tmp_path_factory.mktemp("down"),
                          free_ports())
    own.start(timeout_s=120)
    try:
        sift = await make_served(weaviate=own)
    finally:
        own.stop()  # Weaviate goes away while Sift keeps serving
    await sift.post(p.channel_mention(sift.connector.service_url, "how do I set up the VPN?"))
    [reply] = await sift.connector.wait_for_messages(1)
    [row] = await sift.rows_when(Interaction, 1)
    assert reply.text == messages.with_reference(RetrievalError.user_message,
                                                 row.correlation_id)
