"""The permission rule: which access groups a question may search with (fails closed)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from bot.chat.access import PUBLIC, Asker, Audience, Visibility
from bot.permissions.cache import TtlCache
from bot.permissions.directory import GroupDirectory, Identity
from bot.permissions.graph import GraphMembership
from bot.permissions.slack_identity import LookupFailed, SlackDirectory
from bot.slack.spec import PLATFORM as SLACK_PLATFORM
from bot.teams.spec import PLATFORM as TEAMS_PLATFORM

log = logging.getLogger(__name__)


class GroupResolver:
    """CHANNEL answers search ("public", *the channel's declared audience); PRIVATE answers
    search ("public", *the asker's own groups). Any failed lookup means public only."""

    def __init__(self, directory: GroupDirectory, *, slack: SlackDirectory | None = None,
                 graph: GraphMembership | None = None, ttl_s: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.directory = directory
        self._slack = slack
        self._graph = graph
        self._cache: TtlCache[tuple[str, ...]] = TtlCache(ttl_s, clock)
        self._warned: set[str] = set()

    async def groups_for(self, asker: Asker, audience: Audience) -> tuple[str, ...]:
        if audience.visibility is Visibility.CHANNEL:
            groups = (PUBLIC, *self._declared(audience.groups))
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
        """The declared groups the asker belongs to; () when who they are is unknown."""
        if not self.directory.names:  # nothing to belong to: no lookups
            return ()
        key = (asker.platform, asker.workspace, asker.user, asker.email.casefold())
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        try:
            identity = await self._identify(asker)
        except LookupFailed as exc:  # not cached: the next question tries again
            log.warning("%s user %s gets public answers only: %s", asker.platform,
                        asker.user or "?", exc)
            return ()
        groups = self.directory.groups_of(identity)
        self._cache.put(key, groups)
        return groups

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
