"""The canary suite for Teams channels as a source: threads synced into a real Weaviate from
the fake Graph through the Teams connector reach, through `sift serve`, only their readers:
a private channel's for its members' personal chats and the channel's own answers, a standard
channel's for the team's members; never another channel, an outsider or the web chat."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app import App
from bot.settings import SourceSettings
from bot.teams.app import ROUTE
from bot.teams.spec import TeamsSettings
from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from storage.models import Interaction
from sync.connectors.base import SourceConfig
from sync.connectors.teams import TeamsConnector
from sync.connectors.teams import TeamsSettings as SourceOptions
from sync.job import JobConfig, SyncJob
from tests.conftest import index_config, unique_collection
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.teams_connector import FakeConnector
from tests.fakes.teams_graph import CLIENT_ID, SECRET, TENANT, FakeTeamsGraph
from tests.scenarios.stack import ServedSift, settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

TEAM_MARK, PRIVATE_MARK = "CANARY-TMSTEAM-H4N8", "CANARY-TMSPRIV-W2C6"
IT = "0f4e2a7c-1b1d-4b7e-9a52-3e1c8d6b2f10"
VAULT, HELP = p.CHANNEL, "19:8d2b4f6a1c3e5a7b9d0f2e4c6a8b0d1f@thread.tacv2"
MEMBER, EVE, OUTSIDER = p.user(1), p.user(2), p.user(3)
QUESTION = "What is the door code for the server room?"
SOURCE = "chat"
CLIENT_STATE = "teams-client-state-8b2f"  # the Graph subscriptions' (pushes)


def marks(text: str) -> set[str]:
    return set(re.findall(r"CANARY-TMS[A-Z]+-[A-Z0-9]{4}", text))


def echo(prompt: str) -> str:
    cites = "".join(f"[{n}]" for n in range(1, prompt.count("<excerpt n=") + 1))
    return "Codes: " + " ".join(sorted(marks(prompt))) + f" {cites}."


def source_options(graph: FakeTeamsGraph) -> dict[str, Any]:
    return {"teams": ["IT"], "channels": ["it-help", VAULT], "tenant_id": TENANT,
            "client_id": CLIENT_ID, "authority": graph.login_url, "min_chars": 10,
            "client_state": CLIENT_STATE}


def tenant(graph: FakeTeamsGraph) -> None:
    """IT: Ana and Eve; its private #vault: Ana. The same question answered in each."""
    for who, email in ((MEMBER, "ana@acme.example"), (EVE, "eve@acme.example"),
                       (OUTSIDER, "olga@acme.example")):
        graph.add_user(who["aadObjectId"], who["name"], email)
    ana, eve = MEMBER["aadObjectId"], EVE["aadObjectId"]
    graph.add_team(IT, "IT", [ana, eve])
    graph.add_channel(IT, HELP, "it-help")
    graph.add_channel(IT, VAULT, "vault", membership="private", members=[ana])
    for channel, mark in ((HELP, TEAM_MARK), (VAULT, PRIVATE_MARK)):
        root = graph.post(IT, channel, ana, f"<p>{QUESTION}</p>")
        graph.post(IT, channel, eve if channel == HELP else ana, f"<p>The server room door "
                   f"code is {mark}; the door to the server room opens with {mark}.</p>",
                   reply_to=root)


@dataclass
class Tenant:
    graph: FakeTeamsGraph
    collection: str
    index: WeaviateIndex
    embedder: LocalEmbedder
    state: MemorySyncState

    async def sync(self, full: bool = False) -> Any:
        connector = TeamsConnector(SourceConfig(SOURCE, url=self.graph.graph_url, token=SECRET),
                                   SourceOptions(**source_options(self.graph)))
        return await SyncJob(SOURCE, connector, self.index, self.embedder, self.state,
                             JobConfig(live_principals=("teams:",))).run(full=full)


@pytest.fixture(name="synced")  # named apart, so that other modules may import it
async def synced_fixture(weaviate_server: ManagedWeaviate, embedder: LocalEmbedder
                 ) -> AsyncIterator[Tenant]:
    graph = FakeTeamsGraph()
    await graph.start()
    tenant(graph)
    name = unique_collection("CanaryTeamsSrc")
    index = WeaviateIndex(index_config(weaviate_server, name), embedder.name,
                          embedder.dimension)
    await index.connect()
    synced = Tenant(graph, name, index, embedder, MemorySyncState())
    first = await synced.sync(full=True)
    assert first.counts.added == 2, first
    yield synced
    await index.drop()
    await index.close()
    await graph.stop()


@pytest.fixture(name="served")
async def served_fixture(tmp_path: Path, weaviate_server: ManagedWeaviate, embedder: LocalEmbedder,
                 fake_anthropic: FakeAnthropic, synced: Tenant) -> AsyncIterator[ServedSift]:
    fake_anthropic.grade_rule = lambda q, d: (0.9, "Names the door code.")
    fake_anthropic.answer_from_prompt = echo
    source = SourceSettings.model_validate({
        "name": SOURCE, "kind": "teams", "url": synced.graph.graph_url, "token": SECRET,
        "teams": source_options(synced.graph)})
    app = App(settings_for(tmp_path, weaviate_server, synced.collection, fake_anthropic,
                           sources=[source], teams=TeamsSettings(enabled=True)))
    app.__dict__["embedder"] = embedder
    sift = ServedSift(app)
    await sift.start()
    yield sift
    await sift.stop()


@pytest.fixture
async def connector() -> AsyncIterator[FakeConnector]:
    server = FakeConnector()
    await server.start()
    yield server
    await server.stop()


def in_channel(url: str, channel: str, sender: dict[str, Any]) -> dict[str, Any]:
    payload = p.channel_mention(url, QUESTION, sender=sender)
    return dict(json.loads(json.dumps(payload).replace(p.CHANNEL, channel)))


async def answered(sift: ServedSift, n: int = 1, timeout_s: float = 30) -> None:
    """Until `n` answers are recorded and linked to the Teams messages they went out as."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = await asyncio.to_thread(sift.rows, Interaction)
        if len(rows) >= n and all(r.message_ref for r in rows):
            await asyncio.sleep(0.3)  # a streamed answer's last update follows its link
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no linked answer")


CASES = [
    ("personal", MEMBER, {TEAM_MARK, PRIVATE_MARK}),  # a member of both, in private
    ("vault", MEMBER, {PRIVATE_MARK}),  # the private channel's own answer: its threads
    ("it-help", MEMBER, {TEAM_MARK}),  # another channel: read by people outside #vault
    ("personal", EVE, {TEAM_MARK}),  # in the team, not in #vault
    ("personal", OUTSIDER, set()),  # in neither
]


@pytest.mark.parametrize(("where", "sender", "expected"), CASES,
                         ids=[f"{w}-{s['name'][-1]}" for w, s, _ in CASES])
async def test_each_teams_place_shows_exactly_what_its_readers_may_see(
        served: ServedSift, connector: FakeConnector, fake_anthropic: FakeAnthropic,
        where: str, sender: dict[str, Any], expected: set[str]) -> None:
    url = connector.service_url
    payload = (p.personal_message(url, QUESTION, sender=sender) if where == "personal"
               else in_channel(url, VAULT if where == "vault" else HELP, sender))
    status, _ = await served.post(ROUTE, json=payload)
    assert status in (200, 202)
    await answered(served)
    assert marks(json.dumps([r.body for r in connector.received])) == expected
    assert marks(json.dumps([r.body for r in fake_anthropic.requests])) == expected


async def test_the_web_chat_as_the_public_sees_no_teams_thread(
        served: ServedSift, fake_anthropic: FakeAnthropic) -> None:
    async with aiohttp.ClientSession(served.base_url,
                                     cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        page = await (await browser.get("/")).text()
        token = re.search(r'name="sift-csrf" content="([0-9a-f]+)"', page)
        assert token is not None, page[:300]
        async with browser.post("/chat/ask", json={"question": QUESTION,
                                                   "csrf": token.group(1)}) as response:
            assert response.status == 200
            said = await response.text()
    assert marks(said) == set()
    assert marks(json.dumps([r.body for r in fake_anthropic.requests])) == set()
    assert len(await asyncio.to_thread(served.rows, Interaction)) == 1  # it did answer


async def test_sifts_own_answers_in_a_channel_are_never_indexed(
        served: ServedSift, connector: FakeConnector, synced: Tenant,
        fake_anthropic: FakeAnthropic) -> None:
    await served.post(ROUTE, json=in_channel(connector.service_url, HELP, MEMBER))
    await answered(served)
    said = [str(r.body.get("text") or "") for r in connector.received
            if isinstance(r.body, dict) and "Codes:" in str(r.body.get("text") or "")]
    assert said and TEAM_MARK in said[-1]
    # Graph now holds the question and Sift's answer in its thread, posted by Sift's app.
    root = synced.graph.post(IT, HELP, MEMBER["aadObjectId"], f"<p>{QUESTION}</p>")
    synced.graph.post(IT, HELP, None, f"<p>{said[-1]}</p>", reply_to=root,
                      app={"id": CLIENT_ID, "displayName": "Sift"})
    before = await synced.index.count_by_document(SOURCE)
    incremental = await synced.sync()
    full = await synced.sync(full=True)
    after = await synced.index.count_by_document(SOURCE)
    # The question is a document of its own (min_chars=10); Sift's reply in its thread is not.
    assert set(after) - set(before) == {f"{HELP}/{root}"}
    assert incremental.counts.added == 1 and full.counts.added == 0
    fake_anthropic.requests.clear()
    await served.post(ROUTE, json=p.personal_message(connector.service_url, QUESTION,
                                                     sender=EVE))
    await answered(served, 2)
    prompts = json.dumps([r.body for r in fake_anthropic.requests])
    assert "door code for the server room" in prompts  # the new document is retrieved
    assert "Codes:" not in prompts  # but never what Sift said
