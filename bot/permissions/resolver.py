"""The permission rule: which access groups a question may search with (fails closed)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from bot.chat.access import PUBLIC, Asker, Audience, Visibility
from bot.permissions.cache import TtlCache
from bot.permissions.directory import GroupDirectory, Identity
from bot.permissions.graph import GraphMembership
from bot.permissions.slack_channels import SlackChannelMembers
from bot.permissions.slack_identity import LookupFailed, SlackDirectory
from bot.permissions.teams_channels import TeamsChannelMembers
from bot.slack.spec import PLATFORM as SLACK_PLATFORM
from bot.teams.spec import PLATFORM as TEAMS_PLATFORM
from sync.connectors.slack import PRIVATE_PREFIX

log = logging.getLogger(__name__)


class GroupResolver:
    """CHANNEL answers search ("public", *the channel's declared audience); PRIVATE answers
    search ("public", *the asker's own groups). Any failed lookup means public only."""

    def __init__(self, directory: GroupDirectory, *, slack: SlackDirectory | None = None,
                 graph: GraphMembership | None = None,
                 channels: SlackChannelMembers | None = None,
                 teams: TeamsChannelMembers | None = None, ttl_s: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.directory = directory
        self._slack = slack
        self._graph = graph
        self._channels = channels if channels is not None and channels.configured else None
        self._teams = teams if teams is not None and teams.configured else None
        self._cache: TtlCache[tuple[str, ...]] = TtlCache(ttl_s, clock)
        self._warned: set[str] = set()

    async def groups_for(self, asker: Asker, audience: Audience) -> tuple[str, ...]:
        if audience.visibility is Visibility.CHANNEL:
            groups = (PUBLIC, *self._declared(audience.groups),
                      *await self._own_channel(asker, audience.channel))
        else:
            groups = (PUBLIC, *await self.own_groups(asker))
        # A group's members also read what the connectors mark with the principals it maps.
        return self.directory.with_principals(groups)

    def _declared(self, groups: tuple[str, ...]) -> list[str]:
        known = self.directory.names
        for name in sorted(set(groups) - known - {PUBLIC} - self._warned):
            self._warned.add(name)
            log.warning("a channel audience names group %r, which is not declared in "
                        "[[groups]]; it is ignored (public only) until it is", name)
        return [g for g in groups if g in known]

    async def own_groups(self, asker: Asker) -> tuple[str, ...]:
        """The declared groups the asker belongs to, the private Slack channels they are a
        member of (`slack:channel:<id>`), and the teams and private Teams channels a Teams
        source reads that they are in; () when who they are is unknown."""
        if not self.directory.names and self._channels is None and self._teams is None:
            return ()  # nothing to belong to
        key = (asker.platform, asker.workspace, asker.user, asker.email.casefold())
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        groups: tuple[str, ...] = ()
        complete = True
        try:
            if self.directory.names:
                groups = self.directory.groups_of(await self._identify(asker))
        except LookupFailed as exc:  # not cached: the next question tries again
            complete = False
            log.warning("%s user %s gets public answers only: %s", asker.platform,
                        asker.user or "?", exc)
        try:
            groups += await self._channel_principals(asker)
        except LookupFailed as exc:  # each part fails closed on its own
            complete = False
            log.warning("%s user %s gets no private Slack channel's threads: %s",
                        asker.platform, asker.user or "?", exc)
        try:
            groups += await self._teams_principals(asker)
        except LookupFailed as exc:
            complete = False
            log.warning("%s user %s gets no Teams channel's threads: %s", asker.platform,
                        asker.user or "?", exc)
        if complete:
            self._cache.put(key, groups)
        return groups

    async def _own_channel(self, asker: Asker, channel: str) -> tuple[str, ...]:
        """An answer shown in a private channel a Slack source reads may use that channel's
        own threads: everyone who reads the answer is a member. No other channel's. So may
        one in a Teams channel (a standard one's readers are its team)."""
        if asker.platform == TEAMS_PLATFORM:
            return await self._own_teams_channel(channel)
        if self._channels is None or asker.platform != SLACK_PLATFORM or not channel:
            return ()
        try:
            listed = await self._channels.private_ids()
        except LookupFailed as exc:
            log.warning("channel %s's answer leaves out its own threads: %s", channel, exc)
            return ()
        return (f"{PRIVATE_PREFIX}{channel}",) if channel in listed else ()

    async def _own_teams_channel(self, channel: str) -> tuple[str, ...]:
        if self._teams is None or not channel:
            return ()
        try:
            principal = await self._teams.channel_principal(channel)
        except LookupFailed as exc:
            log.warning("channel %s's answer leaves out its own threads: %s", channel, exc)
            return ()
        return (principal,) if principal else ()

    async def _teams_principals(self, asker: Asker) -> tuple[str, ...]:
        """A Teams asker by their Entra object id (or UPN); anyone else by their email."""
        if self._teams is None:
            return ()
        user = asker.user if asker.platform == TEAMS_PLATFORM else ""
        return await self._teams.principals_of(user, asker.email)

    async def _channel_principals(self, asker: Asker) -> tuple[str, ...]:
        """A Slack asker by their id; anyone else by their email's Slack account."""
        if self._channels is None:
            return ()
        user = asker.user if asker.platform == SLACK_PLATFORM else ""
        if not user and asker.email:
            user = await self._channels.user_by_email(asker.email)
        return await self._channels.principals_of(user) if user else ()

    async def _identify(self, asker: Asker) -> Identity:
        if asker.platform == SLACK_PLATFORM:
            if self._slack is None:
                raise LookupFailed("Slack identity lookups need SIFT_SLACK_BOT_TOKEN")
            if not asker.user:
                raise LookupFailed("the Slack event names no user")
            return await self._slack.identity(asker.user)
        if asker.platform == TEAMS_PLATFORM:
            entra: frozenset[str] = frozenset()
            if self._graph is not None and self.directory.entra_group_ids:
                entra = await self._graph.groups_of(asker.user)
            return Identity(email=asker.email, entra_object_id=asker.user, entra_groups=entra)
        return Identity(email=asker.email)

    async def startup_problems(self) -> list[str]:
        """Sentences for the operator: group definitions that cannot work as written."""
        handles = sorted(self.directory.slack_handles)
        if not handles:
            return []
        if self._slack is None:
            return [f"[[groups]] name Slack user groups ({', '.join(handles)}) but "
                    "SIFT_SLACK_BOT_TOKEN is not set; nobody gets a group through them"]
        try:
            missing = await self._slack.missing_handles()
        except LookupFailed as exc:
            return [f"could not list Slack user groups to check [[groups]]: {exc}"]
        return [f"group '{g}' names the Slack user group '{h}', which does not exist in the "
                "workspace; nobody gets the group through it"
                for h in missing for g in self.directory.naming_handle(h)]

    async def aclose(self) -> None:
        if self._graph is not None:
            await self._graph.aclose()
