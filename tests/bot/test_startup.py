"""`sift serve`'s start-up lines: each surface on, or off with the setting that is missing."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.settings import Settings, SourceSettings
from bot.startup import surface_lines


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("SIFT_") or name.upper() == "ANTHROPIC_API_KEY":
            monkeypatch.delenv(name)


def test_nothing_configured_says_what_is_off_and_why() -> None:
    lines = surface_lines(Settings(port=4000), {})
    assert lines == [
        "Slack: off (SIFT_SLACK_BOT_TOKEN is not set)",
        "Teams: off (SIFT_TEAMS_APP_ID is not set; to try Teams locally without an app, set "
        "SIFT_TEAMS__ENABLED=true and listen on 127.0.0.1)",
        "Web chat: open http://127.0.0.1:4000/ in a browser",
        "HTTP API: on at http://127.0.0.1:4000/api/v1 for personal access tokens (sift tokens "
        "create; OpenAPI at http://127.0.0.1:4000/api/v1/openapi.json)",
        "MCP: on at http://127.0.0.1:4000/mcp (streamable HTTP) for personal access tokens "
        "(sift tokens create)",
        "Admin console: off (neither SIFT_ADMIN__PASSWORD nor SIFT_ADMIN__OIDC__ISSUER is set)",
        "Source sample: never synced; a first sync starts now",
    ]


def test_configured_surfaces_and_last_syncs(tmp_path: Path) -> None:
    settings = Settings(
        slack_bot_token=SecretStr("xoxb-1"), slack_app_token=SecretStr("xapp-1"),
        teams_app_id="11111111-2222", teams_tenant_id="t", port=4000,
        sources=[SourceSettings(name="wiki", kind="folder", path=tmp_path),
                 SourceSettings(name="kb", kind="folder", path=tmp_path),
                 SourceSettings(name="help", kind="zendesk", url="https://acme.zendesk.com",
                                token=SecretStr("t"))])
    lines = surface_lines(settings, {"wiki": datetime(2026, 11, 24, 9, 5, tzinfo=UTC)},
                          admin=True)
    assert lines[0].startswith("Slack: on, Socket Mode")
    assert lines[1] == "Teams: on at http://127.0.0.1:4000/api/messages (app 11111111-2222)"
    assert lines[5] == "Admin console: on at http://127.0.0.1:4000/admin/"
    assert lines[6:] == ["Source wiki: last synced 2026-11-24 09:05 UTC",
                         "Source kb: never synced; a first sync starts now",
                         "Source help: never synced; a first sync starts now; push "
                         "notifications at http://127.0.0.1:4000/sync/hooks/help"]


def test_teams_turned_on_without_an_app_is_anonymous_local_testing() -> None:
    lines = surface_lines(Settings(port=4000, teams={"enabled": True}), {})
    assert lines[1] == ("Teams: on at http://127.0.0.1:4000/api/messages for local testing "
                        "only (anonymous: SIFT_TEAMS_APP_ID is not set)")


def test_slack_over_http_and_teams_switched_off() -> None:
    settings = Settings(slack_bot_token=SecretStr("xoxb-1"),
                        slack_signing_secret=SecretStr("s"), port=4000,
                        teams={"enabled": False}, sync={"sync_on_start": False})
    lines = surface_lines(settings, {})
    assert lines[0] == "Slack: on, HTTP events at http://127.0.0.1:4000/slack/events"
    assert lines[1] == "Teams: off (SIFT_TEAMS__ENABLED is false)"
    assert lines[-1] == "Source sample: never synced (run `sift sync`)"


def test_web_chat_beyond_loopback_needs_the_console_sign_in() -> None:
    settings = Settings(host="0.0.0.0", port=4000, teams={"enabled": False})
    assert surface_lines(settings, {})[2] == (
        "Web chat: off (SIFT_HOST 0.0.0.0 is reachable from other machines and no sign-in "
        "protects it: set SIFT_ADMIN__PASSWORD or SIFT_ADMIN__OIDC__ISSUER)")
    assert surface_lines(settings, {}, admin=True)[2] == (
        "Web chat: on at http://0.0.0.0:4000/ for people signed in to the admin console")
    off = surface_lines(Settings(port=4000, web_chat={"enabled": False}), {})
    assert off[2] == "Web chat: off (SIFT_WEB_CHAT__ENABLED is false)"


def test_behind_a_proxy_the_lines_name_the_public_url() -> None:
    settings = Settings(port=4000, host="0.0.0.0", public_url="https://sift.example.com/",
                        slack_bot_token=SecretStr("xoxb-1"), teams={"enabled": False})
    lines = surface_lines(settings, {}, admin=True)
    assert lines[0] == "Slack: on, HTTP events at https://sift.example.com/slack/events"
    assert lines[5] == "Admin console: on at https://sift.example.com/admin/"
    assert not any("0.0.0.0" in line for line in lines)


def test_the_api_and_mcp_switched_off_say_which_setting() -> None:
    lines = surface_lines(Settings(port=4000, api={"enabled": False},
                                   mcp={"enabled": False}), {})
    assert lines[3:5] == ["HTTP API: off (SIFT_API__ENABLED is false)",
                          "MCP: off (SIFT_MCP__ENABLED is false)"]
