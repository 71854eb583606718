"""The HTTP edge and the Web API: signatures, url_verification, retries, manifest."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.bot.slack.conftest import (
    Q_TS,
    QUESTION,
    SlackStack,
    ask_in_channel,
)
from tests.fakes.slack_payloads import (
    BOT_USER,
    CHANNEL,
    DM,
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
