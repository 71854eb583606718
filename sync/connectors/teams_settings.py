"""The `[sources.teams]` table, and the Teams bot's own app filling what a source leaves out."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import Field, SecretStr

from sync.connectors.base import SourceConfig
from sync.connectors.common.entra import EntraNames
from sync.connectors.common.retry_knobs import RetryKnobs

NAMES = EntraNames(tenant="`teams.tenant_id` (or SIFT_TEAMS_TENANT_ID)",
                   client_id="`teams.client_id` (or SIFT_TEAMS_APP_ID)",
                   secret="the source's `token` (or SIFT_TEAMS_APP_PASSWORD: the client "
                          "secret, expired or revoked?)",
                   certificate="`teams.certificate_path` (or SIFT_TEAMS__CERTIFICATE_PFX)",
                   authority="`teams.authority` (or SIFT_PERMISSIONS__LOGIN_URL)")


class TeamsSettings(RetryKnobs):
    """The `[sources.teams]` table (with the four retry keys every HTTP kind has). Credentials
    default to the Teams bot's own app."""

    teams: list[str] = Field(default_factory=list)  # team ids or display names
    # Channel ids ("19:…@thread.tacv2") or names within those teams. Empty: every standard
    # channel of the listed teams; private and shared channels only when listed.
    channels: list[str] = Field(default_factory=list)
    bots: list[str] = Field(default_factory=list)  # other apps' ids whose messages count
    app_id: str = ""  # Sift's own app id (default SIFT_TEAMS_APP_ID): never indexed
    min_chars: int = Field(200, ge=0)  # a message without replies shorter than this is noise
    client_state: SecretStr | None = None  # the Graph subscriptions' clientState (pushes)
    tenant_id: str = ""
    client_id: str = ""
    authority: str = ""  # default SIFT_PERMISSIONS__LOGIN_URL, else Microsoft's public cloud
    certificate_path: Path | None = None
    certificate_password: SecretStr | None = None
    timeout_s: float = Field(60.0, gt=0)  # Graph's message pages can be slow to build


@dataclass(frozen=True)
class BotApp:
    """The Teams bot's Entra app and Graph addresses: a Teams source's unless it names its own."""

    tenant: str = ""
    client_id: str = ""
    secret: str | None = None
    certificate: Path | None = None
    graph_url: str = ""
    login_url: str = ""


def with_bot_app(config: SourceConfig, options: TeamsSettings, bot: BotApp
                 ) -> tuple[SourceConfig, TeamsSettings]:
    own_credential = config.token or options.certificate_path
    config = replace(config, url=config.url or bot.graph_url,
                     token=config.token or (None if own_credential else bot.secret))
    return config, options.model_copy(update={
        "tenant_id": options.tenant_id or bot.tenant,
        "client_id": options.client_id or bot.client_id,
        "app_id": options.app_id or bot.client_id or options.client_id,
        "authority": options.authority or bot.login_url,
        "certificate_path": options.certificate_path or (
            None if own_credential or bot.secret else bot.certificate)})

