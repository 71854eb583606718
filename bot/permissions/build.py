"""Builds the access resolver from settings: groups, Slack and Graph lookups when configured."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from bot.permissions.directory import GroupDirectory
from bot.permissions.graph import GraphCredentials, GraphMembership
from bot.permissions.resolver import GroupResolver
from bot.permissions.slack_identity import SlackDirectory
from bot.settings import Settings

DEFAULT_SLACK_API = "https://slack.com/api/"


def build_resolver(settings: Settings) -> GroupResolver:
    directory = GroupDirectory(settings.groups)
    ttl = settings.permissions.cache_ttl_s
    slack = None
    if settings.slack_bot_token is not None:
        client = AsyncWebClient(token=settings.slack_bot_token.get_secret_value(),
                                base_url=(settings.slack_api_url or DEFAULT_SLACK_API)
                                .rstrip("/") + "/")
        slack = SlackDirectory(client, directory.slack_handles, ttl)
    graph = None
    p = settings.permissions
    if directory.entra_group_ids and settings.teams_app_password is not None \
            and settings.teams_app_id and settings.teams_tenant_id:
        graph = GraphMembership(GraphCredentials(
            settings.teams_tenant_id, settings.teams_app_id,
            settings.teams_app_password.get_secret_value(), p.graph_url, p.login_url),
            directory.entra_group_ids)
    return GroupResolver(directory, slack=slack, graph=graph, ttl_s=ttl)
