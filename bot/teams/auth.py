"""Who may post to /api/messages: Bot Framework JWTs in production, anonymous on loopback only."""

from __future__ import annotations

import logging

from microsoft_agents.hosting.core.authorization import AgentAuthConfiguration, AuthTypes

from bot.settings_check import is_loopback
from bot.teams.spec import TeamsConfig
from rag.errors import ConfigError

log = logging.getLogger(__name__)


def check_exposure(c: TeamsConfig, host: str) -> None:
    """Run before anything starts: `sift serve` refuses an unauthenticated Teams endpoint
    reachable from other machines, and credentials it could not use."""
    if not c.enabled:
        return
    if c.app_id:  # every request then needs a valid JWT
        _secret_configuration(c)
        return
    if is_loopback(host):
        return
    sentence = (
        f"SIFT_HOST is {host!r}, which is reachable from other machines, but "
        "SIFT_TEAMS_APP_ID and SIFT_TEAMS_APP_PASSWORD are not set, so anyone could post to "
        "/api/messages: set them (see docs/teams.md), listen on 127.0.0.1, or "
        "set SIFT_TEAMS__ENABLED=false."
    )
    raise ConfigError(sentence, user_message=sentence)


def _secret_configuration(c: TeamsConfig) -> AgentAuthConfiguration:
    if not c.tenant_id:
        sentence = ("SIFT_TEAMS_APP_ID is set but SIFT_TEAMS_TENANT_ID is not: set it to the "
                    "Directory (tenant) ID of the bot's app registration.")
        raise ConfigError(sentence, user_message=sentence)
    app, tenant = c.app_id, c.tenant_id
    if c.app_password is not None:
        return AgentAuthConfiguration(
            AuthTypes.client_secret, app, tenant,
            c.app_password, anonymous_allowed=False)
    pfx = c.options.certificate_pfx
    if pfx is not None:
        if not pfx.is_file():
            sentence = f"SIFT_TEAMS__CERTIFICATE_PFX names {pfx}, which is not a file."
            raise ConfigError(sentence, user_message=sentence)
        return AgentAuthConfiguration(
            AuthTypes.certificate, app, tenant, cert_pfx_file=str(pfx),
            anonymous_allowed=False)
    sentence = ("SIFT_TEAMS_APP_ID is set but neither SIFT_TEAMS_APP_PASSWORD nor "
                "SIFT_TEAMS__CERTIFICATE_PFX is, so Sift could not sign its replies.")
    raise ConfigError(sentence, user_message=sentence)


def auth_configuration(c: TeamsConfig, host: str) -> AgentAuthConfiguration:
    """The SDK's connection settings: validated JWTs when an app id is configured; otherwise
    anonymous requests, accepted only while the server listens on loopback."""
    if c.app_id:
        return _secret_configuration(c)
    check_exposure(c, host)
    log.warning("Teams: SIFT_TEAMS_APP_ID is not set, so POST /api/messages on %s accepts "
                "unauthenticated requests (local testing only; replies carry no token)", host)
    return AgentAuthConfiguration(anonymous_allowed=True)
