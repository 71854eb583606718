"""The HTTP edge and the Web API: signatures, url_verification, streaming, retries, manifest."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rag.logcontext import CorrelationFilter
from tests.bot.slack.conftest import (
    Q_TS,
    QUESTION,
    SlackStack,
    StackFactory,
    all_text,
    ask_in_channel,
    blocks_of,
)
from tests.fakes.slack_payloads import (
    BOT_USER,
    CHANNEL,
    DM,
    USER,
    app_mention,
    message,
    next_event_id,
    reaction,
)
from tests.fakes.slack_server import Failure


@pytest.mark.parametrize("tamper", ["signature", "stale", "missing"])
async def test_bad_requests_get_401_and_never_reach_a_handler(stack: SlackStack,
                                                              tamper: str) -> None:
    body = json.dumps(app_mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS,
                                  event_id=next_event_id()))
    kw: dict[str, Any] = {}
    if tamper == "signature":
        kw["headers"] = {"X-Slack-Signature": "v0=" + "0" * 64}
    elif tamper == "stale":
        kw["timestamp"] = int(time.time()) - 6 * 60
    else:
        kw["headers"] = {"X-Slack-Signature": ""}
    delivery = await stack.driver.post(body, "application/json", **kw)
    await stack.driver.settle()
    assert delivery.status == 401
    assert stack.slack.calls == []  # not even auth.test: verification comes first
    assert not stack.anthropic.requests


async def test_url_verification_is_answered(stack: SlackStack) -> None:
    delivery = await stack.driver.event({"token": "x", "challenge": "c-123",
                                         "type": "url_verification"})
    assert delivery.status == 200 and json.loads(delivery.body) == {"challenge": "c-123"}


async def test_streaming_posts_through_chat_stream(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True)
    await stack.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    await stack.driver.settle()
    start = stack.slack.calls_to("chat.startStream")
    stop = stack.slack.calls_to("chat.stopStream")
    assert len(start) == 1 and len(stop) == 1 and not stack.slack.calls_to("chat.postMessage")
    assert start[0].args["thread_ts"] == Q_TS and start[0].args["recipient_user_id"] == USER
    final = stack.slack.posted(CHANNEL)[0]
    assert "[[1]](https://wiki.example/staging-creds)" in final["text"]
    assert final["blocks"][-1]["type"] == "context_actions"
    assert stack.stores.interactions.rows[1].message_ref == final["ts"]


async def test_streaming_falls_back_to_one_post(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True)
    stack.slack.fail("chat.startStream", Failure("not_allowed_token_type"))
    posted = await ask_in_channel(stack)
    assert posted.args["thread_ts"] == Q_TS and "[1]" in all_text(posted)


PARAGRAPH = "Rotate the staging credentials with the documented vault command [1]. " * 5


@pytest.mark.parametrize("method", ["chat.appendStream", "chat.stopStream"])
async def test_a_stream_that_breaks_off_is_completed_in_place(make_stack: StackFactory,
                                                              method: str) -> None:
    stack = await make_stack(streaming=True)
    stack.anthropic.answer_rule = lambda q, n: "\n\n".join([PARAGRAPH] * 3)
    stack.slack.fail(method, Failure("message_not_in_streaming_state"))
    await stack.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    await stack.driver.settle()
    assert stack.slack.calls_to("chat.startStream") and stack.slack.calls_to(method)
    assert not stack.slack.calls_to("chat.postMessage")
    [message] = stack.slack.posted(CHANNEL)  # one message, no duplicate
    [update] = stack.slack.calls_to("chat.update")
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL, message["ts"])
    blocks = blocks_of(update)
    assert "<https://wiki.example/staging-creds|[1]>" in blocks[0]["text"]["text"]
    assert blocks[-1]["type"] == "context_actions" and message["blocks"] == update.args["blocks"]
    assert stack.stores.interactions.rows[1].message_ref == message["ts"]


async def test_a_stream_that_cannot_be_completed_is_logged_with_the_reference(
        make_stack: StackFactory, caplog: pytest.LogCaptureFixture) -> None:
    stack = await make_stack(streaming=True)
    caplog.handler.addFilter(CorrelationFilter())
    stack.slack.fail("chat.stopStream", Failure("message_not_in_streaming_state"))
    stack.slack.fail("chat.update", Failure("cant_update_message"))
    await stack.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    await stack.driver.settle()
    assert stack.slack.calls_to("chat.update") and not stack.slack.calls_to("chat.postMessage")
    row = stack.stores.interactions.rows[1]
    reference = row.answer.question.correlation_id
    logged = [r for r in caplog.records if getattr(r, "correlation_id", "") == reference]
    assert any(r.exc_info and "cant_update_message" in str(r.exc_info[1])
               and reference in r.getMessage() for r in logged)
    assert row.message_ref == stack.slack.posted(CHANNEL)[0]["ts"]


async def test_rate_limits_and_server_errors_are_retried(stack: SlackStack) -> None:
    stack.slack.fail("chat.postMessage", Failure("ratelimited", 429, {"Retry-After": "0"}))
    stack.slack.fail("chat.postMessage", Failure("service_unavailable", 503))
    await ask_in_channel(stack)
    assert len(stack.slack.calls_to("chat.postMessage")) == 3
    assert len(stack.slack.posted(CHANNEL)) == 1  # one answer, no error notice


MANIFEST = Path(__file__).resolve().parents[3] / "deploy" / "slack-manifest.yaml"


def test_manifest_asks_for_exactly_the_scopes_and_events_needed() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert manifest["oauth_config"]["scopes"]["bot"] == [
        "app_mentions:read", "chat:write", "im:history", "channels:history", "reactions:read",
        "reactions:write"]
    settings = manifest["settings"]
    assert settings["event_subscriptions"]["bot_events"] == [
        "app_mention", "message.im", "message.channels", "reaction_added", "reaction_removed"]
    assert settings["event_subscriptions"]["request_url"].endswith("/slack/events")
    assert settings["interactivity"]["request_url"].endswith("/slack/events")


async def test_every_subscribed_event_is_acknowledged(stack: SlackStack) -> None:
    """An unhandled event gets bolt's 404, which Slack would keep retrying."""
    manifest = yaml.safe_load(MANIFEST.read_text())
    samples = {
        "app_mention": app_mention("<@UBOT> hi", event_id=next_event_id()),
        "message.im": message("hi", channel=DM, channel_type="im", event_id=next_event_id()),
        "message.channels": message("chatter", event_id=next_event_id()),
        "reaction_added": reaction("tada", "1.1", event_id=next_event_id()),
        "reaction_removed": reaction("tada", "1.1", removed=True, event_id=next_event_id()),
    }
    for name in manifest["settings"]["event_subscriptions"]["bot_events"]:
        assert (await stack.driver.event(samples[name])).status == 200, name
    await stack.driver.settle()
