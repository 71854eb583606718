"""Pure parts of the Teams adapter: retry timing, who may connect, SDK auth settings."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from microsoft_agents.hosting.core.authorization import AgentAuthConfiguration, AuthTypes
from pydantic import SecretStr

from bot.settings import Settings
from bot.settings_check import is_loopback
from bot.teams import spec as teams_spec
from bot.teams.auth import auth_configuration, check_exposure
from bot.teams.connector import RetryPolicy
from bot.teams.spec import TeamsSettings
from rag.errors import ConfigError

NOW = datetime(2026, 11, 22, 9, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("attempt", "retry_after", "jitter", "expected"), [
    (0, None, 0.0, 0.5),
    (1, None, 0.0, 1.0),
    (3, None, 1.0, 5.0),  # 0.5 * 8, plus a quarter
    (10, None, 0.0, 30.0),  # capped
    (0, "4", 0.9, 4.0),  # the server knows best
    (0, "120", 0.0, 30.0),
])
def test_retry_delay(attempt: int, retry_after: str | None, jitter: float,
                     expected: float) -> None:
    assert RetryPolicy(4, 0.5, 30.0).delay(attempt, retry_after, jitter, NOW) == expected


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("", False), ("::", False),
    ("10.0.0.5", False), ("sift.example.com", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def settings(**kw: Any) -> Settings:
    return Settings(**kw)


def exposure(**kw: Any) -> None:
    """Teams' check before `sift serve` starts, on these settings."""
    s = settings(**kw)
    check_exposure(teams_spec.config(s), s.host)


def auth(**kw: Any) -> AgentAuthConfiguration:
    s = settings(**kw)
    return auth_configuration(teams_spec.config(s), s.host)


def enabled(**kw: Any) -> bool:
    return teams_spec.config(settings(**kw)).enabled


CREDS: dict[str, Any] = {"teams_app_id": "app-id", "teams_tenant_id": "tenant-id",
                         "teams_app_password": SecretStr("secret")}


@pytest.mark.parametrize("kw", [
    {"host": "127.0.0.1"},
    {"host": "0.0.0.0", **CREDS},
    {"host": "0.0.0.0", "teams": TeamsSettings(enabled=False)},
])
def test_serving_is_allowed(kw: dict[str, Any]) -> None:
    exposure(**kw)


ANONYMOUS = TeamsSettings(enabled=True)  # Teams turned on without an app: local testing


def test_teams_is_off_unless_configured() -> None:
    assert not enabled(host="0.0.0.0")
    exposure(host="0.0.0.0")  # nothing to refuse: no /api/messages at all
    assert enabled(**CREDS)
    assert enabled(teams=ANONYMOUS)


def test_public_address_without_credentials_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        exposure(host="0.0.0.0", teams=ANONYMOUS)
    assert "SIFT_TEAMS_APP_ID" in caught.value.user_message
    assert "0.0.0.0" in caught.value.user_message


def test_no_app_id_on_loopback_is_anonymous(caplog: pytest.LogCaptureFixture) -> None:
    config = auth(host="127.0.0.1", teams=ANONYMOUS)
    assert config.ANONYMOUS_ALLOWED and not config.CLIENT_ID
    assert "unauthenticated" in caplog.text


def test_no_app_id_on_a_public_address_is_refused() -> None:
    with pytest.raises(ConfigError):
        auth(host="0.0.0.0", teams=ANONYMOUS)


def test_client_secret() -> None:
    config = auth(host="0.0.0.0", **CREDS)
    assert config.AUTH_TYPE is AuthTypes.client_secret
    assert (config.CLIENT_ID, config.TENANT_ID, config.CLIENT_SECRET) == (
        "app-id", "tenant-id", "secret")
    assert not config.ANONYMOUS_ALLOWED


def test_certificate(tmp_path: Path) -> None:
    pfx = tmp_path / "bot.pfx"
    pfx.write_bytes(b"not checked here")
    config = auth(teams_app_id="app-id", teams_tenant_id="t",
                  teams=TeamsSettings(certificate_pfx=pfx))
    assert config.AUTH_TYPE is AuthTypes.certificate
    pfx_file = config.CERT_PFX_FILE
    assert pfx_file == str(pfx)


@pytest.mark.parametrize(("kw", "named"), [
    ({"teams_app_id": "app-id", "teams_tenant_id": "t"}, "SIFT_TEAMS_APP_PASSWORD"),
    ({"teams_app_id": "app-id", "teams_app_password": SecretStr("s")}, "SIFT_TEAMS_TENANT_ID"),
    ({"teams_app_id": "app-id", "teams_tenant_id": "t",
      "teams": TeamsSettings(certificate_pfx=Path("/nonexistent/bot.pfx"))}, "not a file"),
])
@pytest.mark.parametrize("check", [auth, exposure])
def test_incomplete_credentials_are_refused(kw: dict[str, Any], named: str,
                                            check: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        check(host="127.0.0.1", **kw)
    assert named in caught.value.user_message
