"""The Teams bot's own Entra app, which a Teams source reads Graph with unless it names its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.teams.spec import config
from sync.connectors.base import SourceConfig
from sync.connectors.teams_settings import BotApp, TeamsSettings, with_bot_app

if TYPE_CHECKING:
    from bot.settings import Settings, SourceSettings


def bot_app(settings: Settings) -> BotApp:
    """SIFT_TEAMS_TENANT_ID, SIFT_TEAMS_APP_ID and its secret (or certificate), and the Graph
    and sign-in addresses the permission look-ups use (SIFT_PERMISSIONS__*)."""
    c, p = config(settings), settings.permissions
    return BotApp(c.tenant_id, c.app_id, c.app_password, c.options.certificate_pfx,
                  p.graph_url, p.login_url)


def source_config(settings: Settings, source: SourceSettings,
                  base: SourceConfig | None = None) -> tuple[SourceConfig, TeamsSettings]:
    """A `kind = "teams"` source's connector inputs, the bot's app filling what it leaves out."""
    options = source.options
    assert isinstance(options, TeamsSettings)
    return with_bot_app(base or source.connector_config(), options, bot_app(settings))
