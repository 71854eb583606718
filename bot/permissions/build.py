"""Builds the access resolver from settings: groups, Slack and Graph lookups when configured."""

from __future__ import annotations

import logging

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
    if settings.slack_bot_token is not None:
        # The same client as the adapter's: retries on 429 and 5xx, NO_PROXY honoured.
        retries = slack_spec.config(settings).options.api_retries
        client = web_client(settings.slack_bot_token.get_secret_value(),
                            settings.slack_api_url, retries=retries)
        slack = SlackDirectory(client, directory.slack_handles, ttl)
        # A private channel a Slack source reads is readable by its current members.
        listed = tuple(c for s in settings.resolved_sources if s.kind == "slack"
                       for c in getattr(s.options, "channels", ()))
        channels = SlackChannelMembers(client, listed, ttl)
    graph = None
    p, pfx = settings.permissions, teams_spec.config(settings).options.certificate_pfx
    if directory.entra_group_ids and settings.teams_app_id and settings.teams_tenant_id and (
            settings.teams_app_password is not None or pfx is not None):
        # The Teams bot's app reads Graph, with its secret or else its certificate.
        app = EntraApp(settings.teams_tenant_id, settings.teams_app_id,
                       settings.teams_app_password, pfx if settings.teams_app_password is None
                       else None, authority=p.login_url, timeout_s=10.0)
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
