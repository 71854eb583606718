"""PostgreSQL stopped for 15 s while Slack traffic arrives, through `sift serve`: the real server
is shut down (as an operator's restart does) and started again. Answers in flight and asked in
the gap are delivered and recorded, reactions and clicks in the gap are counted, nobody hears
"Something went wrong"; past SIFT_STORAGE__OUTAGE_WAIT_S the voter is told the database is
unreachable and the log says what was not saved, under the reference the voter was given."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.settings import StorageSettings
from rag import messages
from rag.embed import LocalEmbedder
from rag.logcontext import CorrelationFilter
from storage.models import Feedback, Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import (
    BOT_TOKEN,
    BOT_USER,
    CHANNEL,
    SIGNING_SECRET,
    block_action,
    next_event_id,
    reaction,
)
from tests.fakes.slack_server import FakeSlack
from tests.pg import Cluster
from tests.scenarios.slack_stack import SlackSift, serve_on_slack, stop_all
from tests.scenarios.stack import settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

QUESTION = "How do I rotate the staging database credentials?"
OUTAGE_S = 15.0
Serve = Callable[[float], Awaitable[SlackSift]]


@pytest.fixture
async def served(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,
                 embedder: LocalEmbedder, fake_anthropic: FakeAnthropic, fake_slack: FakeSlack,
                 own_postgres: tuple[Cluster, str]) -> AsyncIterator[Serve]:
    running: list[SlackSift] = []

    async def serve(wait_s: float) -> SlackSift:
        settings = settings_for(
            tmp_path, weaviate_server, corpus, fake_anthropic, database_url=own_postgres[1],
            slack_bot_token=SecretStr(BOT_TOKEN), slack_signing_secret=SecretStr(SIGNING_SECRET),
            slack_api_url=fake_slack.api_url, storage=StorageSettings(outage_wait_s=wait_s))
        running.append(await serve_on_slack(settings, embedder, fake_slack))
        return running[-1]

    yield serve
    await stop_all(running)


def ts(n: int) -> str:
    return f"17000{n:05d}.000100"


async def ask(s: SlackSift, n: int) -> None:
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION} ({n})", ts=ts(n))


def said(slack: FakeSlack) -> str:
    return json.dumps([c.args for c in slack.calls if c.method.startswith("chat.")])


async def test_a_15_second_outage_loses_no_answer_record_or_vote(
        served: Serve, own_postgres: tuple[Cluster, str]) -> None:
    cluster, _ = own_postgres
    s = await served(30.0)
    for n in (0, 1):  # two answers to vote on
        await ask(s, n)
        await s.answer_in(CHANNEL, n + 1)
    voted_up, voted_down = (m["ts"] for m in s.slack.posted(CHANNEL)[:2])
    await s.rows(Interaction, 2, message_ref=voted_down)  # linked before the outage

    for n in (2, 3, 4):  # in flight as the server goes down
        await ask(s, n)
    await asyncio.to_thread(cluster.pause)
    down_since = asyncio.get_running_loop().time()
    await ask(s, 5)  # asked in the gap
    await s.driver.event(reaction("+1", voted_up, event_id=next_event_id()))
    click = await s.driver.click(block_action("down", message_ts=voted_down, thread_ts=ts(1)))
    assert click.status == 200
    await asyncio.sleep(OUTAGE_S - (asyncio.get_running_loop().time() - down_since))
    await asyncio.to_thread(cluster.resume)

    await s.slack.wait_for("chat.postMessage", 6, timeout_s=60)
    rows = await s.rows(Interaction, 6)
    assert sorted(r.question for r in rows) == [f"{QUESTION} ({n})" for n in range(6)]
    assert [r.status for r in rows] == ["answered"] * 6
    posted = {m["ts"] for m in s.slack.posted(CHANNEL)}
    linked = await s.rows(Interaction, 6, message_channel=CHANNEL)
    assert {r.message_ref for r in linked} == posted  # every answer findable for votes
    votes = await s.rows(Feedback, 2)
    by_answer = {r.message_ref: r.id for r in rows}
    assert {(v.interaction_id, v.vote, v.channel) for v in votes} == {
        (by_answer[voted_up], 1, "reaction"), (by_answer[voted_down], -1, "button")}
    prompt = await s.slack.wait_for("chat.postEphemeral", 1, timeout_s=30)
    assert prompt[-1].args["text"] == messages.DOWNVOTE_PROMPT  # the click was answered
    await s.driver.settle()
    assert messages.INTERNAL_ERROR not in said(s.slack)
    assert messages.DATABASE_DOWN not in said(s.slack)


async def test_past_the_bound_the_voter_is_told_and_the_log_names_the_reference(
        served: Serve, own_postgres: tuple[Cluster, str],
        caplog: pytest.LogCaptureFixture) -> None:
    cluster, _ = own_postgres
    s = await served(1.0)
    await ask(s, 0)
    await s.answer_in(CHANNEL)
    answer_ts = s.slack.posted(CHANNEL)[0]["ts"]
    await s.rows(Interaction, 1, message_ref=answer_ts)
    await asyncio.to_thread(cluster.pause)
    caplog.set_level(logging.WARNING)
    caplog.handler.addFilter(CorrelationFilter())
    await s.driver.click(block_action("up", message_ts=answer_ts, thread_ts=ts(0)))
    [told] = await s.slack.wait_for("chat.postEphemeral", 1, timeout_s=30)
    reference = re.fullmatch(re.escape(messages.DATABASE_DOWN) + r" \(reference: (\w+)\)",
                             told.args["text"])
    assert reference is not None, told.args["text"]
    logged = [r for r in caplog.records if getattr(r, "correlation_id", "") ==
              reference.group(1)]
    assert any("trying again" in r.getMessage() for r in logged)
    assert any("giving up" in r.getMessage() for r in logged)
    assert any(r.getMessage().startswith("vote on") and r.exc_info for r in logged)
    await asyncio.to_thread(cluster.resume)
