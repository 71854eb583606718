"""The Slack edge against a bad day: blank secrets, forged requests in the log, proxies."""

from __future__ import annotations

import json
import logging
from typing import Any, cast

import pytest
from pydantic import SecretStr

from bot.app import App
from bot.settings import Settings
from bot.slack import spec as slack_spec
from bot.slack.app import build_slack_adapter
from rag.errors import ConfigError
from sync.connectors.common.slack_client import web_client
from tests.bot.slack.conftest import Q_TS, SlackStack
from tests.fakes.slack_payloads import (
    APP_TOKEN,
    BOT_TOKEN,
    BOT_USER,
    app_mention,
    next_event_id,
)
from tests.fakes.slack_server import FakeSlack


@pytest.mark.parametrize("secret", ["   ", "\n\t"])
def test_a_blank_signing_secret_is_refused(secret: str) -> None:
    settings = Settings(slack_bot_token=SecretStr(BOT_TOKEN),
                        slack_signing_secret=SecretStr(secret))
    with pytest.raises(ConfigError) as refused:
        build_slack_adapter(slack_spec.config(settings), App(settings).around(cast(Any, None)))
    assert "SIFT_SLACK_SIGNING_SECRET is empty or only spaces" in refused.value.user_message


async def test_a_forged_request_body_never_reaches_the_log(stack: SlackStack,
                                                           caplog: pytest.LogCaptureFixture
                                                           ) -> None:
    caplog.set_level(logging.DEBUG)
    body = json.dumps(app_mention(f"<@{BOT_USER}> my password is hunter2-FORGED", ts=Q_TS,
                                  event_id=next_event_id()))
    delivery = await stack.driver.post(body, "application/json",
                                       headers={"X-Slack-Signature": "v0=" + "0" * 64})
    assert delivery.status == 401
    assert "invalid signature" in caplog.text  # the refusal itself is still logged
    assert "hunter2-FORGED" not in caplog.text


async def test_no_proxy_is_honoured_as_well_as_https_proxy(fake_slack: FakeSlack,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    client = web_client(BOT_TOKEN, fake_slack.api_url, retries=0)
    assert (await client.auth_test())["ok"]  # straight to the (local) Web API
    monkeypatch.setenv("NO_PROXY", "chat.internal")
    assert web_client(BOT_TOKEN, fake_slack.api_url).proxy == "http://127.0.0.1:9"


async def test_socket_mode_that_never_connects_leaves_no_connections_open(
        fake_slack: FakeSlack) -> None:
    settings = Settings(slack_bot_token=SecretStr(BOT_TOKEN),
                        slack_app_token=SecretStr(APP_TOKEN[:-1] + "x"),  # Slack refuses it
                        slack_api_url=fake_slack.api_url)
    adapter = build_slack_adapter(slack_spec.config(settings),
                                  App(settings).around(cast(Any, None)))
    with pytest.raises(ConfigError) as refused:
        await adapter.start_socket_mode(timeout_s=1.0)
    assert "SIFT_SLACK_APP_TOKEN" in refused.value.user_message
    session = adapter.bolt.client.session
    assert session is not None and session.closed
