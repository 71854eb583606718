"""The canary suite for Slack channels as a source: a private channel's thread, synced into a
real Weaviate through the Slack connector, reaches only its members' private answers through
`sift serve`; Sift's own answers posted in a channel are never indexed."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.settings import SourceSettings
from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from storage.models import Interaction
from sync.connectors.base import SourceConfig
from sync.connectors.slack import SlackConnector, SlackSettings
from sync.job import JobConfig, SyncJob
from tests.conftest import index_config, unique_collection
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.slack_payloads import (
    BOT_TOKEN,
    BOT_USER,
    SIGNING_SECRET,
    app_mention,
    message,
    next_event_id,
)
from tests.fakes.slack_server import FakeSlack
from tests.scenarios.slack_stack import SlackSift, serve_on_slack, stop_all
from tests.scenarios.stack import settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

PUBLIC_MARK, PRIVATE_MARK = "CANARY-SLKPUB-Q7W2", "CANARY-SLKPRIV-T5Y9"
HELP, VAULT = "C0ITHELP", "G0VAULT"
MEMBER, MEMBER_DM, EVE, EVE_DM = "U0ANA", "D0ANA", "U0EVE", "D0EVE"
QUESTION = "What is the door code for the server room?"
OWN_ANSWER = "SIFT-ANSWERED"  # what every answer of Sift's starts with
SOURCE = "chat"


def marks(text: str) -> set[str]:
    return set(re.findall(r"CANARY-SLK[A-Z]+-[A-Z0-9]{4}", text))


def echo(prompt: str) -> str:
    """An answer naming every marker its excerpts hold (and whatever else they said)."""
    cites = "".join(f"[{n}]" for n in range(1, prompt.count("<excerpt n=") + 1))
    return f"{OWN_ANSWER} " + " ".join(sorted(marks(prompt))) + f" {cites}."


def thread(slack: FakeSlack, channel: str, ts: str, mark: str) -> None:
    slack.add_message(channel, MEMBER, "What is the door code for the server room?", ts)
    slack.add_message(channel, "U0BEN", f"The server room door code is {mark}; the door "
                      f"to the server room opens with {mark}.", ts[:-3] + "900", ts)


@dataclass
class Workspace:
    slack: FakeSlack
    index: WeaviateIndex
    collection: str
    embedder: LocalEmbedder
    state: MemorySyncState

    async def sync(self, full: bool = False, state: MemorySyncState | None = None) -> Any:
        connector = SlackConnector(SourceConfig(SOURCE, url=self.slack.api_url,
                                                token=BOT_TOKEN),
                                   SlackSettings(channels=[HELP, "#vault"], min_chars=10,
                                                 lookback_days=3650))
        return await SyncJob(SOURCE, connector, self.index, self.embedder, self.state,
                             JobConfig(live_principals=("slack:channel:",))).run(full=full)


@pytest.fixture(name="workspace")  # named apart, so that other modules may import it
async def workspace_fixture(weaviate_server: ManagedWeaviate, embedder: LocalEmbedder
                    ) -> AsyncIterator[Workspace]:
    slack = FakeSlack()
    await slack.start()
    slack.add_user(MEMBER, "ana@acme.example")
    slack.add_user(EVE, "eve@acme.example")
    slack.add_user("U0BEN", "ben@acme.example")
    slack.add_channel(HELP, "it-help", members=[MEMBER, EVE, "U0BEN"])
    slack.add_channel(VAULT, "vault", private=True, members=[MEMBER, "U0BEN"])
    thread(slack, HELP, "1767000000.000100", PUBLIC_MARK)
    thread(slack, VAULT, "1767000100.000100", PRIVATE_MARK)
    name = unique_collection("CanarySlack")
    index = WeaviateIndex(index_config(weaviate_server, name), embedder.name,
                          embedder.dimension)
    await index.connect()
    ws = Workspace(slack, index, name, embedder, MemorySyncState())
    first = await ws.sync(full=True)
    assert first.counts.added == 2, first
    yield ws
    await index.drop()
    await index.close()
    await slack.stop()


@pytest.fixture(name="served")
async def served_fixture(tmp_path: Path, weaviate_server: ManagedWeaviate, embedder: LocalEmbedder,
                 fake_anthropic: FakeAnthropic, workspace: Workspace
                 ) -> AsyncIterator[SlackSift]:
    fake_anthropic.grade_rule = lambda q, d: (0.9, "Names the door code.")
    fake_anthropic.answer_from_prompt = echo
    source = SourceSettings.model_validate({"name": SOURCE, "kind": "slack",
                                            "slack": {"channels": [HELP, "#vault"]}})
    settings = settings_for(tmp_path, weaviate_server, workspace.collection, fake_anthropic,
                            sources=[source], slack_bot_token=SecretStr(BOT_TOKEN),
                            slack_signing_secret=SecretStr(SIGNING_SECRET),
                            slack_api_url=workspace.slack.api_url)
    running = [await serve_on_slack(settings, embedder, workspace.slack)]
    yield running[0]
    await stop_all(running)


async def ask(s: SlackSift, user: str, channel: str, ts: str, n: int) -> None:
    if channel.startswith("D"):
        s.slack.add_message(channel, user, QUESTION, ts)
        payload = message(QUESTION, ts=ts, user=user, channel=channel, channel_type="im",
                          event_id=next_event_id())
    else:
        text = f"<@{BOT_USER}> {QUESTION}"
        s.slack.add_message(channel, user, text, ts)
        payload = app_mention(text, ts=ts, user=user, channel=channel,
                              event_id=next_event_id())
    assert (await s.driver.event(payload)).status == 200
    await s.rows(Interaction, n)


async def sifts_answers(slack: FakeSlack, channel: str) -> list[dict[str, Any]]:
    """Sift's finished messages in `channel`, once there is one (answers stream in)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done = [m for m in slack.messages.get(channel, [])
                if m.get("user") == BOT_USER and OWN_ANSWER in m.get("text", "")]
        if done:
            return done
        await asyncio.sleep(0.05)
    raise AssertionError(f"Sift never answered in {channel}")


def seen_in(slack: FakeSlack, channel: str) -> set[str]:
    return marks(json.dumps([c.args for c in slack.calls if c.args.get("channel") == channel]))


def seen_by_claude(claude: FakeAnthropic) -> set[str]:
    return marks(json.dumps([r.body for r in claude.requests]))


async def test_a_private_channels_thread_reaches_only_its_members_private_answers(
        served: SlackSift, fake_anthropic: FakeAnthropic) -> None:
    await ask(served, MEMBER, MEMBER_DM, "1767001000.000100", 1)  # a member, in a DM
    await served.driver.settle()
    assert seen_in(served.slack, MEMBER_DM) == {PUBLIC_MARK, PRIVATE_MARK}


async def test_a_private_channels_own_answer_may_use_its_own_threads(
        served: SlackSift, fake_anthropic: FakeAnthropic) -> None:
    await ask(served, MEMBER, VAULT, "1767001000.000100", 1)  # a mention in #vault itself
    await served.driver.settle()
    assert seen_in(served.slack, VAULT) == {PUBLIC_MARK, PRIVATE_MARK}


@pytest.mark.parametrize(("user", "channel"), [
    (EVE, EVE_DM),  # not a member, in her own DM
    (MEMBER, HELP),  # a member, but the answer is read by the whole public channel
])
async def test_no_one_else_ever_sees_the_private_marker(
        served: SlackSift, fake_anthropic: FakeAnthropic, user: str, channel: str) -> None:
    await ask(served, user, channel, "1767001000.000100", 1)
    await served.driver.settle()
    assert seen_in(served.slack, channel) == {PUBLIC_MARK}  # the public thread still answers
    assert seen_by_claude(fake_anthropic) == {PUBLIC_MARK}


async def test_sifts_own_answers_in_a_channel_are_never_indexed(
        served: SlackSift, workspace: Workspace, fake_anthropic: FakeAnthropic) -> None:
    asked = f"{time.time():.6f}"  # now: after the last sync, as a new question would be
    await ask(served, MEMBER, HELP, asked, 1)  # Sift answers in #it-help
    answers = await sifts_answers(workspace.slack, HELP)
    assert OWN_ANSWER in answers[0]["text"] and PUBLIC_MARK in answers[0]["text"]
    before = await workspace.index.count_by_document(SOURCE)
    incremental = await workspace.sync()
    full = await workspace.sync(full=True)
    after = await workspace.index.count_by_document(SOURCE)
    # The question is a document of its own (min_chars=10); Sift's reply in its thread is not.
    assert set(after) - set(before) == {f"{HELP}:{asked}"}
    assert incremental.counts.added == 1 and full.counts.added == 0
    fake_anthropic.requests.clear()
    await ask(served, EVE, EVE_DM, f"{time.time():.6f}", 2)
    await served.driver.settle()
    prompts = json.dumps([r.body for r in fake_anthropic.requests])
    assert "door code for the server room" in prompts  # the new document is retrieved
    assert OWN_ANSWER not in prompts  # but never what Sift said
