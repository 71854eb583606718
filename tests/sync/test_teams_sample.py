"""The sample Teams tenant in examples/conversations, served by the fake Graph and synced: its
threads become documents, its noise does not, its private channel stays its members', and
every question of its eval file names a document the sync produced."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from sync.connectors.base import SourceConfig, SourceDocument
from sync.connectors.teams import TeamsConnector, TeamsSettings
from tests.fakes.teams_export import load_export
from tests.fakes.teams_graph import CLIENT_ID, SECRET, TENANT, FakeTeamsGraph

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "conversations"
HELP, GENERAL = ("19:a1b2c3d4e5f60718293a4b5c6d7e8f90@thread.tacv2",
                 "19:f0e1d2c3b4a5968778695a4b3c2d1e0f@thread.tacv2")
SEC, DEPLOYS = ("19:5ec0e5ec0e5ec0e5ec0e5ec0e5ec0e5e@thread.tacv2",
                "19:de9107de9107de9107de9107de9107de@thread.tacv2")


@pytest.fixture
async def sample() -> AsyncIterator[FakeTeamsGraph]:
    server = FakeTeamsGraph()
    load_export(server, SAMPLE / "teams-export")
    await server.start()
    yield server
    await server.stop()


async def test_the_sample_tenant_syncs_to_threads_without_its_noise(
        sample: FakeTeamsGraph) -> None:
    connector = TeamsConnector(
        SourceConfig("chat", url=sample.graph_url, token=SECRET),
        TeamsSettings(tenant_id=TENANT, client_id=CLIENT_ID, app_id=CLIENT_ID,
                      authority=sample.login_url, teams=["IT", "Engineering"],
                      channels=["it-help", "General", "sec-private", "deploys"],
                      min_chars=120))
    docs = {d.doc_id: d async for d in connector.documents(None)
            if isinstance(d, SourceDocument)}
    assert set(docs) == {f"{HELP}/1768209240000", f"{HELP}/1768298520000",
                         f"{HELP}/1768405200000", f"{GENERAL}/1768464000000",
                         f"{SEC}/1768821600000", f"{DEPLOYS}/1768914000000",
                         f"{DEPLOYS}/1768988700000", f"{DEPLOYS}/1769101800000"}
    # no "thanks!", no "Happy Friday", no deploy bot card
    assert docs[f"{SEC}/1768821600000"].access == (f"teams:channel:{SEC}",)
    assert docs[f"{HELP}/1768209240000"].access == (
        "teams:team:3b8a6f0e-2c1d-4e5f-9a7b-1c2d3e4f5a60",)
    vpn = docs[f"{HELP}/1768209240000"]
    assert "@Omar Haddad sponsor them in the [Access portal]" in vpn.body
    assert "Sift's own answer" not in vpn.body
    assert vpn.title == ("How do contractors get onto the build VPN? Our new tester starts on "
                         "Monday and the old guest form is gone. (#it-help thread in IT, 12 Jan "
                         "2026)")
    questions = yaml.safe_load((SAMPLE / "teams-questions.yaml").read_text(encoding="utf-8"))
    named = {i for q in questions["questions"] for i in q["expected_doc_ids"]}
    assert named <= set(docs)  # every expected answer is a document the sync produced
