"""The surface registry: each surface's settings, credentials and defaults come from its spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import surfaces
from bot.chat.policy import PolicyDefaults
from bot.settings import Settings
from bot.slack import spec as slack
from bot.teams import spec as teams

ROOT = Path(__file__).resolve().parents[2]


def test_every_credential_is_a_flat_setting_read_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_SLACK_BOT_TOKEN", "xoxb-from-env")
    monkeypatch.setenv("SIFT_SLACK_API_URL", "http://127.0.0.1:9/api/")
    monkeypatch.setenv("SIFT_TEAMS_APP_ID", "00000000-aaaa-bbbb-cccc-000000000001")
    monkeypatch.setenv("SIFT_TEAMS_APP_PASSWORD", "teams-secret")
    settings = Settings()
    bot = slack.config(settings)
    assert (bot.bot_token, bot.api_url) == ("xoxb-from-env", "http://127.0.0.1:9/api/")
    assert bot.signing_secret is None  # not set is None, not ""
    app = teams.config(settings)
    assert (app.app_id, app.app_password) == ("00000000-aaaa-bbbb-cccc-000000000001",
                                              "teams-secret")
    assert "teams-secret" not in repr(settings)  # a secret setting stays masked


def test_the_credentials_are_declared_by_the_surfaces_not_the_settings_module() -> None:
    flat = {spec.flat_name(name) for spec in surfaces.SPECS if spec.credentials
            for name in spec.credentials.model_fields}
    assert {"slack_bot_token", "slack_signing_secret", "slack_app_token", "teams_app_id",
            "teams_app_password", "teams_tenant_id"} <= flat
    assert flat <= set(Settings.model_fields)
    source = (ROOT / "bot" / "settings.py").read_text(encoding="utf-8")
    assert not [name for name in flat if name in source]


def test_a_misspelt_credential_is_refused_like_any_setting() -> None:
    with pytest.raises(ValueError, match="slack_bot_tokn"):
        Settings(slack_bot_tokn="xoxb-typo")


def test_follow_ups_default_per_platform_from_its_own_section() -> None:
    settings = Settings(slack={"follow_ups_without_mention": False})
    assert surfaces.follow_ups(settings) == {"slack": False}
    defaults = PolicyDefaults(follow_ups=surfaces.follow_ups(settings))
    assert defaults.channel("slack").follow_ups is False
    assert defaults.direct("slack").follow_ups is False
    # Slack's setting is Slack's: Teams and the web chat keep follow-ups without a mention.
    assert defaults.channel("teams").follow_ups is True
    assert defaults.direct("web").follow_ups is True
    assert surfaces.follow_ups(Settings()) == {"slack": True}
