"""A Weaviate restart while questions arrive on Slack, through `sift serve`: the real Weaviate
process is stopped and started again; questions asked in the gap are answered once it is back
within SIFT_RETRIEVAL__OUTAGE_WAIT_S, and beyond that bound get one clear sentence."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.settings import RetrievalSettings
from rag import messages
from rag.embed import LocalEmbedder
from rag.errors import RetrievalError
from rag.index import WeaviateIndex
from storage.models import Interaction
from tests.conftest import index_config, unique_collection
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import BOT_TOKEN, BOT_USER, CHANNEL, SIGNING_SECRET
from tests.fakes.slack_server import FakeSlack
from tests.scenarios.slack_stack import SlackSift, serve_on_slack, stop_all
from tests.scenarios.stack import settings_for
from weaviate_server.process import ManagedWeaviate, free_ports

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

QUESTION = "How do I rotate the staging database credentials?"
CITED = "<https://wiki.example/staging-creds|[1]>"
Serve = Callable[[float], Awaitable[SlackSift]]  # a served Sift that waits this long


@pytest.fixture
async def own_weaviate(tmp_path: Path, weaviate_server: ManagedWeaviate,
                       embedder: LocalEmbedder) -> AsyncIterator[tuple[ManagedWeaviate, str]]:
    """A Weaviate process of this test's own (it gets stopped), holding the test corpus."""
    from tests.rag.corpus import CHUNKS

    own = ManagedWeaviate(weaviate_server.binary, tmp_path / "weaviate", free_ports())
    await asyncio.to_thread(own.start, 120)
    name = unique_collection("Restart")
    index = WeaviateIndex(index_config(own, name), embedder.name, embedder.dimension)
    await index.connect()
    await index.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    await index.close()
    try:
        yield own, name
    finally:
        await asyncio.to_thread(own.stop)


@pytest.fixture
async def served(tmp_path: Path, own_weaviate: tuple[ManagedWeaviate, str],
                 embedder: LocalEmbedder, fake_anthropic: FakeAnthropic,
                 fake_slack: FakeSlack) -> AsyncIterator[Serve]:
    running: list[SlackSift] = []

    async def serve(wait_s: float) -> SlackSift:
        own, collection = own_weaviate
        settings = settings_for(
            tmp_path, own, collection, fake_anthropic, slack_bot_token=SecretStr(BOT_TOKEN),
            slack_signing_secret=SecretStr(SIGNING_SECRET), slack_api_url=fake_slack.api_url,
            retrieval=RetrievalSettings(outage_wait_s=wait_s))
        running.append(await serve_on_slack(settings, embedder, fake_slack))
        return running[-1]

    yield serve
    await stop_all(running)


async def ask(s: SlackSift, n: int) -> None:
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=f"1700000{n:03d}.000100")


async def test_questions_in_a_restart_gap_are_answered_once_weaviate_is_back(
        served: Serve, own_weaviate: tuple[ManagedWeaviate, str]) -> None:
    own, _ = own_weaviate
    s = await served(30.0)
    await ask(s, 0)
    assert CITED in str((await s.answer_in(CHANNEL)).args["blocks"])  # answered while up
    await asyncio.to_thread(own.stop)
    asked = time.monotonic()
    for n in range(1, 5):
        await ask(s, n)
    await asyncio.sleep(3)  # the questions are waiting for the index, none answered yet
    assert len(s.slack.calls_to("chat.postMessage")) == 1
    await asyncio.to_thread(own.start, 120)
    back = time.monotonic() - asked
    posted = await s.slack.wait_for("chat.postMessage", 5, timeout_s=60)
    texts = [str(p.args.get("blocks")) for p in posted[1:]]
    assert all(CITED in t for t in texts), texts
    rows = await s.rows(Interaction, 5)
    assert [r.status for r in rows] == ["answered"] * 5
    assert back < 30  # the restart was within the bound


async def test_beyond_the_bound_the_asker_gets_one_clear_sentence(
        served: Serve, own_weaviate: tuple[ManagedWeaviate, str]) -> None:
    own, _ = own_weaviate
    s = await served(2.0)
    await asyncio.to_thread(own.stop)
    started = time.monotonic()
    await ask(s, 1)
    posted = await s.answer_in(CHANNEL)
    waited = time.monotonic() - started
    [row] = await s.rows(Interaction, 1)
    assert posted.args["text"] == messages.with_reference(RetrievalError.user_message,
                                                          row.correlation_id)
    assert row.status == "error"
    assert 2.0 <= waited < 15  # it waited for the bound, not for the query timeouts
