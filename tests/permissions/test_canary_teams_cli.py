"""The Teams source's canary through `sift sync` and `sift ask` on a real Weaviate, with the
Teams bot's own app (SIFT_TEAMS_*): a standard channel's marker reaches `sift ask --as` a team
member's email, a private channel's its member's only; without `--as`, neither."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from rag.embed import LocalEmbedder
from tests.bot.test_cli_ask import sift_environment
from tests.conftest import unique_collection
from tests.fakes.teams_graph import CLIENT_ID, SECRET, TENANT, FakeTeamsGraph
from tests.permissions.cli_canary import drop, seen_by, sift
from tests.permissions.test_canary_teams_channels import (
    PRIVATE_MARK,
    QUESTION,
    TEAM_MARK,
    marks,
    tenant,
)
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
MEMBER_EMAIL, EVE_EMAIL, OUTSIDER_EMAIL = ("ana@acme.example", "eve@acme.example",
                                           "olga@acme.example")


@pytest.fixture
async def graph() -> AsyncIterator[FakeTeamsGraph]:
    server = FakeTeamsGraph()
    await server.start()
    tenant(server)
    yield server
    await server.stop()


@contextlib.contextmanager
def environment(mp: pytest.MonkeyPatch, server: ManagedWeaviate, collection: str,
                home: Path, graph: FakeTeamsGraph) -> Iterator[None]:
    (home / "sift.toml").write_text(
        '[[sources]]\nname = "chat"\nkind = "teams"\n[sources.teams]\nteams = ["IT"]\n'
        'channels = ["it-help", "vault", "no-such-room"]\nmin_chars = 10\n', encoding="utf-8")
    with sift_environment(mp, server, collection, home):
        for name, value in (("SIFT_CONFIG", str(home / "sift.toml")),
                            ("SIFT_TEAMS_APP_ID", CLIENT_ID), ("SIFT_TEAMS_APP_PASSWORD", SECRET),
                            ("SIFT_TEAMS_TENANT_ID", TENANT),
                            ("SIFT_PERMISSIONS__GRAPH_URL", graph.graph_url),
                            ("SIFT_PERMISSIONS__LOGIN_URL", graph.login_url),
                            ("SIFT_RETRIEVAL__DIVERSITY", "false")):
            mp.setenv(name, value)
        yield



async def test_sync_then_ask_shows_each_thread_to_its_readers_only(
        weaviate_server: ManagedWeaviate, embedder: LocalEmbedder, graph: FakeTeamsGraph,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    collection = unique_collection("CanaryTeamsCli")
    try:
        with environment(monkeypatch, weaviate_server, collection, tmp_path, graph):
            code, out, err = await sift("sync")
            printed = out + err
            # The unknown channel is named; the rest is indexed, and the status says one failed.
            assert code == 1, printed
            assert "no channel no-such-room in the listed teams" in printed
            assert "1 document could not be read" in printed
            assert marks(printed) == set()  # the report names channels, never their content
            assert SECRET not in printed
            seen = await seen_by((MEMBER_EMAIL, EVE_EMAIL, OUTSIDER_EMAIL,
                                  "nobody@elsewhere.example"), QUESTION, marks)
    finally:
        await drop(weaviate_server, embedder, collection)
    assert seen == {"public": set(), MEMBER_EMAIL: {TEAM_MARK, PRIVATE_MARK},
                    EVE_EMAIL: {TEAM_MARK}, OUTSIDER_EMAIL: set(),
                    "nobody@elsewhere.example": set()}
