"""The Teams bot's own Entra app, which a Teams source reads Graph with unless it names its own."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.teams.spec import config
from sync.connectors.base import SourceConfig
from sync.connectors.teams import TeamsConnector
from sync.connectors.teams_settings import BotApp, TeamsSettings, with_bot_app

if TYPE_CHECKING:
    from bot.settings import Settings, SourceSettings

log = logging.getLogger(__name__)


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


def thread_connector(settings: Settings) -> TeamsConnector | None:
    """Graph for reading a channel thread (an answer captured from it): the bot's own app
    when its credentials are set (its resource-specific consent covers the teams it is in),
    else the first Teams source's app; None when neither can read Graph."""
    bot = bot_app(settings)
    if bot.tenant and bot.client_id and (bot.secret or bot.certificate):
        source, options = with_bot_app(SourceConfig(name="teams-threads"), TeamsSettings(),
                                       bot)
        return TeamsConnector(source, options)
    for found in settings.resolved_sources:
        if found.kind != "teams":
            continue
        source, options = source_config(settings, found)
        if (source.token or options.certificate_path) and options.tenant_id and \
                options.client_id:
            return TeamsConnector(source, options)
        log.warning("source %s cannot read Graph (no credentials): Teams threads it "
                    "does not name cannot be read either", found.name)
    return None
