"""The HTTP edge and the Web API: signatures, url_verification, retries, manifest."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.slack.manifest import Features, manifest, to_yaml
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
    app_home_opened,
    app_mention,
    assistant_thread_started,
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


async def test_web_api_calls_share_connections(stack: SlackStack) -> None:
    """Each call on a connection of its own is a TCP and, against slack.com, a TLS handshake
    per call, several per answer (slack_sdk's behaviour when no session is given)."""
    await ask_in_channel(stack)
    await ask_in_channel(stack, "How do I set up the VPN?", ts="1700000000.000200")
    calls = [c for c in stack.slack.calls if c.method != "apps.connections.open"]
    peers = {c.peer for c in calls}
    assert len(calls) >= 6 and "" not in peers
    assert len(peers) <= 2, f"{len(calls)} calls over {len(peers)} connections"


MANIFEST = Path(__file__).resolve().parents[3] / "deploy" / "slack-manifest.yaml"


def test_the_committed_manifest_is_the_generated_default() -> None:
    assert MANIFEST.read_text(encoding="utf-8") == to_yaml(manifest(Features()))


def bare(**on: bool) -> Features:
    """Every optional feature off but those named."""
    return Features(**{"slash_command": False, "app_home": False, "capture": False,
                       "files": False, **on})


@pytest.mark.parametrize(("features", "scopes", "events"), [
    (bare(), [], []),
    (bare(files=True), ["files:read"], []),
    (Features(), ["commands", "channels:read", "groups:read", "users:read", "files:read"],
     ["app_home_opened"]),
    (bare(capture=True),  # capture: the channel and the author
     ["channels:read", "groups:read", "users:read"], []),
    (bare(assistant=True),
     ["assistant:write"], ["assistant_thread_started"]),
    (bare(private_channels=True),
     ["groups:history"], ["message.groups"]),
    (bare(directory=True),
     ["users:read", "users:read.email", "usergroups:read"], []),
    (bare(channel_source=True),
     ["channels:read", "groups:read", "groups:history", "users:read", "users:read.email"],
     ["message.groups"]),
    (bare(private_channels=True, directory=True, channel_source=True),
     ["groups:history", "users:read", "users:read.email", "usergroups:read", "channels:read",
      "groups:read"], ["message.groups"]),  # each scope and event once
])
def test_manifest_asks_for_each_scope_only_when_its_feature_is_on(
        features: Features, scopes: list[str], events: list[str]) -> None:
    made = manifest(features)
    assert made["oauth_config"]["scopes"]["bot"] == [
        "app_mentions:read", "chat:write", "im:history", "channels:history", "reactions:read",
        "reactions:write", *scopes]
    settings = made["settings"]
    assert settings["event_subscriptions"]["bot_events"] == [
        "app_mention", "message.im", "message.channels", "reaction_added", "reaction_removed",
        *events]
    assert settings["event_subscriptions"]["request_url"].endswith("/slack/events")
    assert settings["interactivity"]["request_url"].endswith("/slack/events")
    assert ("slash_commands" in made["features"]) is features.slash_command
    assert ("assistant_view" in made["features"]) is features.assistant
    shortcuts = made["features"].get("shortcuts", [])
    assert [s["callback_id"] for s in shortcuts] == (
        ["ask_sift"] * features.slash_command + ["save_to_sift"] * features.capture)


def test_socket_mode_manifest_has_no_request_urls() -> None:
    made = manifest(Features(), socket_mode=True)
    assert "request_url" not in made["settings"]["event_subscriptions"]
    assert "url" not in made["features"]["slash_commands"][0]
    assert made["settings"]["socket_mode_enabled"] is True


async def test_every_subscribed_event_is_acknowledged(stack: SlackStack) -> None:
    """An unhandled event gets bolt's 404, which Slack would keep retrying."""
    samples = {
        "app_mention": app_mention("<@UBOT> hi", event_id=next_event_id()),
        "message.im": message("hi", channel=DM, channel_type="im", event_id=next_event_id()),
        "message.channels": message("chatter", event_id=next_event_id()),
        "reaction_added": reaction("tada", "1.1", event_id=next_event_id()),
        "reaction_removed": reaction("tada", "1.1", removed=True, event_id=next_event_id()),
        "message.groups": message("chatter", channel="G0PRIVATE1", channel_type="group",
                                  event_id=next_event_id()),
        "app_home_opened": app_home_opened(),
        "assistant_thread_started": assistant_thread_started(),
    }
    every = manifest(Features(assistant=True, private_channels=True, directory=True))
    for name in every["settings"]["event_subscriptions"]["bot_events"]:
        assert (await stack.driver.event(samples[name])).status == 200, name
    await stack.driver.settle()


@pytest.mark.parametrize("with_source", [False, True])
def test_the_command_asks_for_channel_history_only_with_a_slack_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        with_source: bool) -> None:
    config = tmp_path / "sift.toml"
    config.write_text('[[sources]]\nname = "chat"\nkind = "slack"\n[sources.slack]\n'
                      'channels = ["#it-help"]\n' if with_source else "", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIFT_DATA_DIR", str(tmp_path))
    assert main(["--config", str(config), "slack", "manifest"]) == 0
    made = yaml.safe_load(capsys.readouterr().out)
    scopes = made["oauth_config"]["scopes"]["bot"]
    events = made["settings"]["event_subscriptions"]["bot_events"]
    assert ("groups:history" in scopes) is with_source
    assert "channels:read" in scopes  # always: a captured answer needs its channel's privacy
    assert ("message.groups" in events) is with_source
