"""Who may read a Teams source's threads: a team's members, a private or shared channel's own."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.permissions.cache import TtlCache
from bot.permissions.slack_identity import LookupFailed
from rag.errors import SyncError
from sync.connectors.teams import TeamsConnector
from sync.connectors.teams_api import Channel, Member, Team, TeamsGraph
from sync.connectors.teams_thread import access_of


@dataclass(frozen=True)
class Place:
    """One principal a Teams source writes, and whose members read it."""

    principal: str
    team: Team
    channel: Channel | None = None  # None: the team's own members


class TeamsChannelMembers:
    """The `teams:team:<id>` and `teams:channel:<id>` principals a person holds now, read
    from Graph (team and channel members) through each Teams source's own app, as that source
    resolves its teams and channels. Places, members and answers are cached for the identity
    TTL; any failed lookup raises LookupFailed, so the person gets none of them."""

    def __init__(self, sources: Sequence[TeamsConnector], ttl_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._sources = tuple(sources)
        self._places: TtlCache[tuple[tuple[Place, ...], dict[str, str]]] = TtlCache(ttl_s,
                                                                                    clock)
        self._members: TtlCache[frozenset[str]] = TtlCache(ttl_s, clock)

    @property
    def configured(self) -> bool:
        return bool(self._sources)

    async def principals_of(self, object_id: str, email: str) -> tuple[str, ...]:
        """The places the person (an Entra object id, or an email) is a member of."""
        keys = {k.strip().casefold() for k in (object_id, email) if k.strip()}
        if not keys:
            return ()
        found: list[str] = []
        for source in self._sources:
            places, _ = await self._resolved(source)
            for place in places:
                if place.principal not in found and keys & await self._members_of(source,
                                                                                   place):
                    found.append(place.principal)
        return tuple(found)

    async def channel_principal(self, channel_id: str) -> str:
        """What an answer shown in a channel of a listed team may read: the channel's own
        principal (its readers are its members), or "" for a channel no source reads."""
        for source in self._sources:
            _, by_channel = await self._resolved(source)
            if channel_id in by_channel:
                return by_channel[channel_id]
        return ""

    async def _resolved(self, source: TeamsConnector
                        ) -> tuple[tuple[Place, ...], dict[str, str]]:
        key = source.label
        cached = self._places.get(key)
        if cached is None:
            try:
                async with source.graph() as api:
                    teams, _ = await source.listed_teams(api)  # unknown names: no places
                    every = [c for team in teams for c in await api.channels(team)]
            except SyncError as exc:  # a team that cannot be listed: asked again next time
                raise LookupFailed(f"{source.label}: {exc.user_message or exc}") from exc
            channels, _ = source.pick(every)
            places = {Place(access_of(c)[0], c.team, None if c.standard else c)
                      for c in channels}
            # Every channel of a read team: a standard one's readers are the team's members.
            by_channel = {c.id: access_of(c)[0] for c in every if c.standard} | {
                c.id: access_of(c)[0] for c in channels}
            cached = (tuple(sorted(places, key=lambda p: p.principal)), by_channel)
            self._places.put(key, cached)
        return cached

    async def _members_of(self, source: TeamsConnector, place: Place) -> frozenset[str]:
        cached = self._members.get(place.principal)
        if cached is None:
            try:
                async with source.graph() as api:
                    members = await self._read(api, place)
            except SyncError as exc:
                raise LookupFailed(f"members of {place.principal}: "
                                   f"{exc.user_message or exc}") from exc
            cached = frozenset(k for m in members for k in (m.user_id, m.email) if k)
            self._members.put(place.principal, cached)
        return cached

    @staticmethod
    async def _read(api: TeamsGraph, place: Place) -> list[Member]:
        return await api.members(place.team, place.channel)
