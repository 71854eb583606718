"""Builds the access resolver from settings: groups, Slack and Graph lookups when configured."""

from __future__ import annotations

import logging

from pydantic import SecretStr

from bot.permissions.directory import GroupDirectory
from bot.permissions.graph import NAMES, GraphMembership
from bot.permissions.resolver import GroupResolver
from bot.permissions.slack_channels import SlackChannelMembers
from bot.permissions.slack_identity import SlackDirectory
from bot.permissions.teams_channels import TeamsChannelMembers
from bot.settings import Settings
from bot.slack import spec as slack_spec
from bot.teams import spec as teams_spec
from bot.teams.source import source_config
from rag.errors import ConfigError
from sync.connectors import teams
from sync.connectors.common.entra import EntraApp, EntraToken
from sync.connectors.common.microsoft import GRAPH_SCOPE
from sync.connectors.common.slack_client import web_client

log = logging.getLogger(__name__)


def build_resolver(settings: Settings) -> GroupResolver:
    directory = GroupDirectory(settings.groups)
    ttl = settings.permissions.cache_ttl_s
    slack, channels = None, None
    bot = slack_spec.config(settings)
    if bot.bot_token is not None:
        # The same client as the adapter's: retries on 429 and 5xx, NO_PROXY honoured.
        client = web_client(bot.bot_token, bot.api_url, retries=bot.options.api_retries)
        slack = SlackDirectory(client, directory.slack_handles, ttl)
        # A private channel a Slack source reads is readable by its current members.
        listed = tuple(c for s in settings.resolved_sources if s.kind == "slack"
                       for c in getattr(s.options, "channels", ()))
        channels = SlackChannelMembers(client, listed, ttl)
    graph = None
    p, teams_bot = settings.permissions, teams_spec.config(settings)
    pfx, secret = teams_bot.options.certificate_pfx, teams_bot.app_password
    if directory.entra_group_ids and teams_bot.app_id and teams_bot.tenant_id and (
            secret is not None or pfx is not None):
        # The Teams bot's app reads Graph, with its secret or else its certificate.
        app = EntraApp(teams_bot.tenant_id, teams_bot.app_id,
                       None if secret is None else SecretStr(secret),
                       pfx if secret is None else None, authority=p.login_url, timeout_s=10.0)
        graph = GraphMembership(EntraToken(app, NAMES, GRAPH_SCOPE),
                                directory.entra_group_ids, p.graph_url)
    return GroupResolver(directory, slack=slack, graph=graph, channels=channels,
                         teams=TeamsChannelMembers(teams_sources(settings), ttl), ttl_s=ttl)


def teams_sources(settings: Settings) -> list[teams.TeamsConnector]:
    """A connector per Teams source, to read its teams' and channels' members with its app.
    One that cannot be built is left out: its threads are then nobody's (fails closed)."""
    found = []
    for source in settings.resolved_sources:
        if source.kind == "teams":
            try:
                found.append(teams.build(*source_config(settings, source)))
            except ConfigError as exc:
                log.warning("source %s: no Teams membership look-ups: %s", source.name,
                            exc.user_message or exc)
    return found
