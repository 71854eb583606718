"""Reading a Teams channel thread for an answer capture: which app reads Graph, what a thread's
posts are, and who may read an answer captured in a standard or a private channel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.chat.capture import PRIVATE_KIND, PUBLIC_KIND, access_for
from bot.settings import PermissionSettings, Settings, SourceSettings
from bot.teams.capture import TeamsThreadReader
from bot.teams.source import thread_connector
from rag.errors import PlatformRefused
from tests.fakes.teams_graph import CLIENT_ID, SECRET, TENANT, FakeTeamsGraph

TEAM = "0b7e6c1a-5d4f-4a3b-9c2d-1e0f9a8b7c6d"
OPEN, VAULT = "19:open00000000000000000000000000000@thread.tacv2", \
    "19:vault0000000000000000000000000000@thread.tacv2"
ANA, BEN = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"


@pytest.fixture
async def graph() -> AsyncIterator[FakeTeamsGraph]:
    server = FakeTeamsGraph()
    await server.start()
    server.add_user(ANA, "Ana Lima", "ana@acme.example")
    server.add_user(BEN, "Ben Ode", "ben@acme.example")
    server.add_team(TEAM, "IT", [ANA, BEN])
    server.add_channel(TEAM, OPEN, "it-help")
    server.add_channel(TEAM, VAULT, "vault", membership="private", members=[ANA])
    yield server
    await server.stop()


def bot_settings(tmp_path: Path, graph: FakeTeamsGraph) -> Settings:
    return Settings(data_dir=tmp_path, teams_app_id=CLIENT_ID, teams_tenant_id=TENANT,
                    teams_app_password=SecretStr(SECRET),
                    permissions=PermissionSettings(graph_url=graph.graph_url,
                                                   login_url=graph.login_url))


async def test_the_bots_own_app_reads_a_thread_skipping_deleted_and_system_posts(
        tmp_path: Path, graph: FakeTeamsGraph) -> None:
    root = graph.post(TEAM, OPEN, ANA, "<p>Where is the <b>VPN</b> profile?</p>")
    gone = graph.post(TEAM, OPEN, BEN, "<p>wrong thread</p>", reply_to=root)
    graph.delete(TEAM, OPEN, gone)
    bot = graph.post(TEAM, OPEN, None, "<p>Not covered.</p>", reply_to=root,
                     app={"id": CLIENT_ID, "displayName": "Sift"})
    reply = graph.post(TEAM, OPEN, BEN, "<p>It is on the intranet under Tools.</p>",
                       reply_to=root)
    connector = thread_connector(bot_settings(tmp_path, graph))
    assert connector is not None
    reader = TeamsThreadReader(connector, TEAM, root)
    posts = await reader.posts(OPEN, reply)
    assert [(p.ref, p.user, p.by_bot) for p in posts] == \
        [(root, ANA, False), (bot, "", True), (reply, BEN, False)]
    assert posts[0].text == "Where is the **VPN** profile?"
    assert posts[0].at < posts[2].at
    place = await reader.place(OPEN)
    assert (place.name, place.kind, place.readers) == ("#it-help", PUBLIC_KIND,
                                                       (f"teams:team:{TEAM}",))
    assert await reader.person(BEN) == "Ben Ode"
    assert f"/{reply}?" in await reader.link(OPEN, reply)


async def test_an_answer_from_a_private_channel_is_read_only_by_its_members_there(
        tmp_path: Path, graph: FakeTeamsGraph) -> None:
    root = graph.post(TEAM, VAULT, ANA, "<p>What is the vault's door code?</p>")
    connector = thread_connector(bot_settings(tmp_path, graph))
    assert connector is not None
    reader = TeamsThreadReader(connector, TEAM, root)
    await reader.posts(VAULT, root)
    place = await reader.place(VAULT)
    assert (place.kind, place.readers) == (PRIVATE_KIND, (f"teams:channel:{VAULT}",))
    # Never the team, never public: the vault's members, and whoever reads it in the vault.
    assert access_for("teams", VAULT, place, ANA) == \
        (f"teams:channel:{VAULT}", f"sift:channel:teams:{VAULT}")


async def test_graph_refusing_the_team_is_a_sentence_for_the_person(
        tmp_path: Path, graph: FakeTeamsGraph) -> None:
    root = graph.post(TEAM, OPEN, ANA, "<p>Where is the VPN profile?</p>")
    graph.forbidden.add(TEAM)
    connector = thread_connector(bot_settings(tmp_path, graph))
    assert connector is not None
    with pytest.raises(PlatformRefused) as refused:
        await TeamsThreadReader(connector, TEAM, root).posts(OPEN, root)
    assert "Graph access" in refused.value.user_message
    assert "HTTP 403" in str(refused.value)  # the cause, for the log


def test_without_the_bots_app_a_teams_source_lends_its_own_else_nothing(
        tmp_path: Path) -> None:
    assert thread_connector(Settings(data_dir=tmp_path)) is None
    source = SourceSettings.model_validate({
        "name": "it-teams", "kind": "teams", "url": "http://127.0.0.1:9/v1.0",
        "token": SECRET, "teams": {"teams": ["IT"], "tenant_id": TENANT,
                                   "client_id": CLIENT_ID}})
    found = thread_connector(Settings(data_dir=tmp_path, sources=[source]))
    assert found is not None and found.source.name == "it-teams"
    without = source.model_copy(update={"token": None})
    assert thread_connector(Settings(data_dir=tmp_path, sources=[without])) is None
