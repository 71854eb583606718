"""The sample Slack export in examples/conversations, served by the fake and synced: its
threads become documents, its noise does not, its private channel stays restricted, and
every question of its eval file names a document the sync produced."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from sync.connectors.base import SourceConfig, SourceDocument
from sync.connectors.slack import SlackConnector, SlackSettings
from tests.fakes.slack_export import load_export
from tests.fakes.slack_payloads import BOT_TOKEN
from tests.fakes.slack_server import FakeSlack

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "conversations"


@pytest.fixture
async def sample() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    load_export(server, SAMPLE / "slack-export")
    await server.start()
    yield server
    await server.stop()


async def test_the_sample_export_syncs_to_threads_without_its_noise(sample: FakeSlack) -> None:
    connector = SlackConnector(
        SourceConfig("chat", url=sample.api_url, token=BOT_TOKEN),
        SlackSettings(channels=["#it-help", "#eng-deploys", "#random", "#sec-incident"],
                      min_chars=120))
    docs = {d.doc_id: d async for d in connector.documents(None)
            if isinstance(d, SourceDocument)}
    assert set(docs) == {"C01ITHELP:1767600000.000100", "C01ITHELP:1767690000.000100",
                         "C01ITHELP:1767780000.000100", "C01DEPLOY:1767610000.000100",
                         "C01DEPLOY:1767700000.000100", "C01RANDOM:1767620500.000100",
                         "G01SECINC:1767630000.000100"}  # no lunch, "ok", joins, statusbot
    assert docs["G01SECINC:1767630000.000100"].access == ("slack:channel:G01SECINC",)
    assert all(d.access == ("public",) for k, d in docs.items() if not k.startswith("G"))
    vpn = docs["C01ITHELP:1767600000.000100"]
    assert "@emi the form moved" in vpn.body and "wg-quick up acme-staging" in vpn.body
    assert vpn.title == ("How do I get access to the staging VPN? The old request form 404s. "
                         "(#it-help thread, 5 Jan 2026)")
    questions = yaml.safe_load((SAMPLE / "questions.yaml").read_text(encoding="utf-8"))
    named = {i for q in questions["questions"] for i in q["expected_doc_ids"]}
    assert named <= set(docs)  # every expected answer is a document the sync produced
