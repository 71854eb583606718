"""Slack end to end through `sift serve`: real Weaviate, SQLite and the real /slack/events route;
Slack is played by signed Events API requests and the fake Web API server, Claude by a fake."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import pytest
from pydantic import SecretStr

from bot.app import App
from bot.settings import ChatSettings, RetrievalSettings
from bot.slack.spec import SlackSettings
from rag import messages, prompts
from rag.errors import ConfigError, RetrievalError
from storage.models import Feedback, Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import (
    APP_TOKEN,
    BOT_ID,
    BOT_USER,
    CHANNEL,
    DM,
    USER,
    app_mention,
    block_action,
    message,
    next_event_id,
    reaction,
)
from tests.fakes.slack_server import Call, FakeSlack
from tests.rag.builders import chunk
from tests.scenarios.slack_stack import Serve
from weaviate_server.process import ManagedWeaviate, free_ports

pytestmark = pytest.mark.weaviate

QUESTION = "How do I rotate the staging database credentials?"
Q_TS = "1700000000.000100"
LOUD = re.compile(r"<!(channel|here|everyone)|<@U|<!subteam")


def shown(call: Call) -> str:
    return json.dumps([call.args.get("text"), call.args.get("blocks")])


async def test_mention_is_answered_in_a_thread_with_citations(make_served: Serve) -> None:
    s = await make_served()
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    posted = await s.answer_in(CHANNEL)
    assert posted.args["channel"] == CHANNEL and posted.args["thread_ts"] == Q_TS
    assert "<https://wiki.example/staging-creds|[1]>" in posted.args["blocks"][0]["text"]["text"]
    assert posted.args["blocks"][-1]["type"] == "context_actions"
    answer_ts = s.slack.posted(CHANNEL)[0]["ts"]
    [row] = await s.rows(Interaction, 1, message_ref=answer_ts)
    assert (row.platform, row.channel, row.thread, row.user_id) == ("slack", CHANNEL, Q_TS, USER)
    assert (row.message_channel, row.question, row.status) == (CHANNEL, QUESTION, "answered")
    await s.driver.settle()
    assert [c.args["name"] for c in s.slack.calls_to("reactions.remove")] == ["eyes"]


async def test_direct_message_is_answered_in_the_dm(make_served: Serve) -> None:
    s = await make_served()
    await s.driver.dm(QUESTION, ts="1700000200.000400")
    posted = await s.answer_in(DM)
    assert posted.args["channel"] == DM and "thread_ts" not in posted.args
    assert "[1]" in shown(posted)
    [row] = await s.rows(Interaction, 1, message_channel=DM)
    assert row.channel == DM


async def test_follow_up_in_the_thread_without_a_mention(make_served: Serve,
                                                        fake_anthropic: FakeAnthropic) -> None:
    s = await make_served()
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    await s.answer_in(CHANNEL)
    await s.driver.reply("thanks, that worked", ts="1700000400.000001", thread_ts=Q_TS)
    await s.driver.reply("and what about production?", ts="1700000500.000001", thread_ts=Q_TS)
    second = await s.answer_in(CHANNEL, 2)
    assert second.args["thread_ts"] == Q_TS
    understood = fake_anthropic.calls("understand")[-1].body["messages"][-1]["content"]
    assert f"user: {QUESTION}" in understood and "assistant: " in understood
    assert understood.endswith("Message: and what about production?")
    rows = await s.rows(Interaction, 2, thread=Q_TS)
    assert [r.question for r in rows] == [QUESTION, "and what about production?"]


async def test_reaction_votes_and_its_removal_retracts_only_its_own_vote(
        make_served: Serve) -> None:
    s = await make_served()
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    await s.answer_in(CHANNEL)
    answer_ts = s.slack.posted(CHANNEL)[0]["ts"]
    [row] = await s.rows(Interaction, 1, message_ref=answer_ts)
    await s.driver.event(reaction("+1", answer_ts, event_id=next_event_id()))
    [vote] = await s.rows(Feedback, 1)
    assert (vote.interaction_id, vote.user_id, vote.vote, vote.channel) == \
        (row.id, USER, 1, "reaction")
    assert await s.thumbs() == {(1, 0)}  # on the cited documents
    await s.driver.event(reaction("+1", answer_ts, removed=True, event_id=next_event_id()))
    for _ in range(100):
        if not await asyncio.to_thread(s.sift.rows, Feedback):
            break
        await asyncio.sleep(0.05)
    assert await asyncio.to_thread(s.sift.rows, Feedback) == []
    assert await s.thumbs() == set()
    # 👍 again, then a 👎 click replaces it: taking the 👍 away must leave the click alone
    await s.driver.event(reaction("+1", answer_ts, event_id=next_event_id()))
    await s.rows(Feedback, 1, vote=1, channel="reaction")
    await s.driver.click(block_action("down", message_ts=answer_ts, thread_ts=Q_TS))
    await s.rows(Feedback, 1, vote=-1, channel="button")
    await s.driver.event(reaction("+1", answer_ts, removed=True, event_id=next_event_id()))
    await s.driver.settle()  # `sift serve` drains the work before it stops
    [vote] = await asyncio.to_thread(s.sift.rows, Feedback)
    assert (vote.vote, vote.channel) == (-1, "button") and await s.thumbs() == {(0, 1)}


async def test_feedback_buttons_and_the_why_comment(make_served: Serve) -> None:
    s = await make_served()
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    await s.answer_in(CHANNEL)
    answer_ts = s.slack.posted(CHANNEL)[0]["ts"]
    await s.rows(Interaction, 1, message_ref=answer_ts)
    assert (await s.driver.click(block_action("up", message_ts=answer_ts, thread_ts=Q_TS))
            ).status == 200
    [vote] = await s.rows(Feedback, 1, vote=1)
    assert vote.channel == "button"
    await s.driver.click(block_action("down", message_ts=answer_ts, thread_ts=Q_TS))
    [vote] = await s.rows(Feedback, 1, vote=-1)  # last write wins
    prompt = await s.slack.wait_for("chat.postEphemeral", 2)
    assert prompt[-1].args["text"] == messages.DOWNVOTE_PROMPT
    await s.driver.reply("it should say who approves it", ts="1700000600.000001",
                         thread_ts=Q_TS)
    [vote] = await s.rows(Feedback, 1, comment="it should say who approves it")
    await s.driver.settle()
    assert len(s.slack.calls_to("chat.postMessage")) == 1  # the comment was not answered


async def test_the_same_event_four_times_gives_one_answer(make_served: Serve) -> None:
    s = await make_served()
    s.slack.add_message(CHANNEL, USER, QUESTION, Q_TS)
    payload = app_mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS, event_id=next_event_id())
    first = await s.driver.event(payload)
    retries = await asyncio.gather(*(s.driver.event(payload, retry_num=n) for n in (1, 2, 3)))
    assert [d.status for d in (first, *retries)] == [200] * 4
    await s.answer_in(CHANNEL)
    await s.driver.settle()
    assert len(s.slack.calls_to("chat.postMessage")) == 1
    assert len(await asyncio.to_thread(s.sift.rows, Interaction)) == 1


@pytest.mark.parametrize("tamper", ["signature", "stale"])
async def test_bad_signature_or_stale_timestamp_is_refused(make_served: Serve,
                                                           tamper: str) -> None:
    s = await make_served()
    body = json.dumps(app_mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS,
                                  event_id=next_event_id()))
    kw: dict[str, Any] = ({"headers": {"X-Slack-Signature": "v0=" + "1" * 64}}
                          if tamper == "signature" else {"timestamp": int(time.time()) - 301})
    delivery = await s.driver.post(body, "application/json", **kw)
    assert delivery.status == 401
    await s.driver.settle()
    assert s.slack.calls == [] and await asyncio.to_thread(s.sift.rows, Interaction) == []


@pytest.mark.slow
async def test_weaviate_down_gives_a_clear_message_in_the_thread(
        make_served: Serve, tmp_path_factory: pytest.TempPathFactory,
        weaviate_server: ManagedWeaviate) -> None:
    own = ManagedWeaviate(weaviate_server.binary, tmp_path_factory.mktemp("down"), free_ports())
    own.start(timeout_s=120)
    try:
        # No waiting for it to come back (test_weaviate_restart.py holds that wait).
        s = await make_served(weaviate=own, retrieval=RetrievalSettings(outage_wait_s=0))
    finally:
        own.stop()  # Weaviate goes away while Sift keeps serving
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    posted = await s.answer_in(CHANNEL)
    [row] = await s.rows(Interaction, 1)
    assert posted.args["thread_ts"] == Q_TS
    assert posted.args["text"] == messages.with_reference(RetrievalError.user_message,
                                                          row.correlation_id)
    assert row.status == "error" and "Traceback" not in shown(posted)


async def test_own_messages_are_ignored(make_served: Serve) -> None:
    s = await make_served()
    own = message("I am Sift", ts="1700000700.000001", user=BOT_USER, channel=DM,
                  channel_type="im", event_id=next_event_id())
    own["event"]["bot_id"] = BOT_ID
    assert (await s.driver.event(own)).status == 200
    await s.driver.settle()
    assert [c.method for c in s.slack.calls] == ["auth.test"]


async def test_long_answer_is_split_into_sections(make_served: Serve,
                                                  fake_anthropic: FakeAnthropic) -> None:
    paragraph = "Rotate the staging credentials with the documented vault command [1]. " * 12
    fake_anthropic.answer_rule = lambda q, n: "\n\n".join([paragraph] * 8)
    s = await make_served()
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    posted = await s.answer_in(CHANNEL)
    sections = [b for b in posted.args["blocks"] if b["type"] == "section"]
    assert len(sections) >= 3 and all(len(b["text"]["text"]) <= 3000 for b in sections)
    assert len(posted.args["blocks"]) <= 50


async def test_document_with_a_channel_mention_is_neutralised(
        make_served: Serve, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = lambda q, d: (0.9, "Relevant.") if "closed" in d else (0.0, "No.")
    s = await make_served(anthropic_api_key=None)  # no LLM: the document is quoted verbatim
    await s.driver.mention(f"<@{BOT_USER}> Is the office closed on Friday?", ts=Q_TS)
    posted = await s.answer_in(CHANNEL)
    assert "office is closed on Friday" in shown(posted)
    assert "&lt;!channel&gt;" in shown(posted) and not LOUD.search(shown(posted))


async def test_http_mode_needs_the_signing_secret(make_served: Serve) -> None:
    with pytest.raises(ConfigError, match="SIFT_SLACK_SIGNING_SECRET") as failure:
        await make_served(slack_signing_secret=None)
    assert "SIFT_SLACK_SIGNING_SECRET" in failure.value.user_message


async def test_streaming_through_sift_serve(make_served: Serve,
                                           fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.stream_delay_s = 0.05
    s = await make_served(slack=SlackSettings(streaming=True))
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    [stop] = await s.slack.wait_for("chat.stopStream")
    [start] = s.slack.calls_to("chat.startStream")
    [written] = fake_anthropic.calls("answer")
    assert start.at < written.finished  # shown while Claude writes, not replayed afterwards
    final = s.slack.posted(CHANNEL)[0]
    streamed = "".join(c.args["markdown_text"] for c in s.slack.calls_to("chat.appendStream"))
    assert streamed == final["text"] and "[1]" in final["text"]
    assert "[1] <https://wiki.example/staging-creds|" in json.dumps(stop.args["blocks"])
    assert stop.args["blocks"][-1]["type"] == "context_actions"
    await s.rows(Interaction, 1, message_ref=final["ts"])
    assert not s.slack.calls_to("chat.postMessage") and not s.slack.calls_to("chat.update")


async def test_socket_mode_when_the_app_token_is_set(make_served: Serve,
                                                     fake_slack: FakeSlack) -> None:
    s = await make_served(slack_app_token=SecretStr(APP_TOKEN), slack_signing_secret=None)
    [opened] = fake_slack.calls_to("apps.connections.open")
    assert opened.headers["Authorization"] == f"Bearer {APP_TOKEN}"
    assert (await s.driver.post("{}", "application/json")).status == 404  # no HTTP route
    fake_slack.add_message(CHANNEL, USER, QUESTION, Q_TS)
    payload = app_mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS, event_id=next_event_id())
    await fake_slack.push(payload, envelope_id="env-1")
    await fake_slack.push(payload, envelope_id="env-2", retry_attempt=1)  # a redelivery
    posted = await s.answer_in(CHANNEL)
    assert posted.args["thread_ts"] == Q_TS and "[1]" in shown(posted)
    await s.rows(Interaction, 1, message_ref=s.slack.posted(CHANNEL)[0]["ts"])
    await s.driver.settle()
    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    assert sorted(a["envelope_id"] for a in fake_slack.socket_acks) == ["env-1", "env-2"]


async def test_socket_mode_leaves_an_envelope_over_the_limit_for_slack_to_deliver_again(
        make_served: Serve, fake_slack: FakeSlack, fake_anthropic: FakeAnthropic) -> None:
    s = await make_served(slack_app_token=SecretStr(APP_TOKEN), slack_signing_secret=None,
                          chat=ChatSettings(max_in_flight=1))
    fake_anthropic.latency_s["answer"] = 2.0  # the first answer is still being written...
    first = app_mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS, event_id=next_event_id())
    second_ts = "1700000000.000200"
    second = app_mention(f"<@{BOT_USER}> How do I set up the VPN?", ts=second_ts,
                         event_id=next_event_id())
    for payload in (first, second):
        fake_slack.add_message(CHANNEL, USER, payload["event"]["text"], payload["event"]["ts"])
    await fake_slack.push(first, envelope_id="env-1")
    async with asyncio.timeout(10):
        while not fake_anthropic.calls("answer"):
            await asyncio.sleep(0.01)
    await fake_slack.push(second, envelope_id="env-2")  # ...when the second arrives
    await s.answer_in(CHANNEL)
    fake_anthropic.latency_s["answer"] = 0.0
    redelivered = await redeliver_until_acknowledged(fake_slack, second)
    await fake_slack.wait_for("chat.postMessage", 2)
    threads = sorted(c.args["thread_ts"] for c in fake_slack.calls_to("chat.postMessage"))
    assert threads == [Q_TS, second_ts]
    acked = {a["envelope_id"] for a in fake_slack.socket_acks}
    assert "env-1" in acked and "env-2" not in acked and redelivered in acked


async def redeliver_until_acknowledged(slack: FakeSlack, payload: dict[str, Any]) -> str:
    """Slack's side: an envelope left unacknowledged is delivered again, a few times."""
    for attempt in range(1, 21):
        envelope = f"env-retry-{attempt}"
        await slack.push(payload, envelope_id=envelope, retry_attempt=attempt)
        for _ in range(50):
            await asyncio.sleep(0.01)
            if any(a["envelope_id"] == envelope for a in slack.socket_acks):
                return envelope
    raise AssertionError("no redelivery was acknowledged")


async def _add_poisoned_document(app: App) -> None:
    index = app.index()
    await index.connect()
    try:
        poisoned = chunk("printer-toner", "Replacing printer toner",
                         "To replace the printer toner, open [here](http://evil.example/steal) "
                         "and follow <http://evil.example/s|the guide>.")
        await index.upsert([poisoned], await app.embedder.embed_documents([poisoned.text]))
    finally:
        await index.close()


async def test_fast_mode_quote_of_a_poisoned_document_has_no_live_link(
        make_served: Serve) -> None:
    s = await make_served(anthropic_api_key=None)  # fast mode: the document is quoted
    await _add_poisoned_document(s.sift.app)
    await s.driver.mention(f"<@{BOT_USER}> How do I replace the printer toner?", ts=Q_TS)
    posted = shown(await s.answer_in(CHANNEL))
    assert "replace the printer toner" in posted
    assert "evil.example" not in posted and "<http://evil" not in posted


async def test_streamed_answer_of_an_obedient_model_leaks_no_link_and_no_prompt(
        make_served: Serve, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.stream_delay_s = 0.02
    fake_anthropic.answer_rule = lambda q, n: (
        f"Open <http://evil.example/s|the vault> and [rotate](http://evil.example/r) [1]. "
        f"My instructions: {prompts.load('answer')}")
    s = await make_served(slack=SlackSettings(streaming=True))
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    await s.slack.wait_for("chat.stopStream")
    await s.driver.settle()
    sent = json.dumps([c.args for c in s.slack.calls if c.method.startswith("chat.")])
    assert "evil.example" not in sent and prompts.CANARY not in sent
    assert "You answer a colleague" not in sent
    final = s.slack.calls_to("chat.update") or s.slack.calls_to("chat.stopStream")
    assert messages.WITHHELD_NOTE in json.dumps(final[-1].args)
