"""The Microsoft Teams channels connector: a thread (or a long message) of a channel is one
document, read through Graph's channel messages delta."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import httpx
from pydantic import SecretStr

from rag.errors import ConfigError
from sync.connectors.base import (
    Checkpoint,
    ConnectorSpec,
    DocumentFailure,
    DocumentGone,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.common.entra import PUBLIC_CLOUD, EntraApp, SourceToken
from sync.connectors.common.oauth import RenewingToken
from sync.connectors.teams_api import (
    GRANT,
    Channel,
    ChannelUnreadable,
    DeltaExpired,
    Message,
    Team,
    TeamsGraph,
)
from sync.connectors.teams_push import TeamsReceiver
from sync.connectors.teams_settings import NAMES, TeamsSettings
from sync.connectors.teams_text import to_markdown
from sync.connectors.teams_thread import thread_document

GRAPH = "https://graph.microsoft.com/v1.0"

class TeamsConnector:
    """Channel threads of the listed teams; each run asks Graph's delta of every channel for
    the roots whose reply chain changed and re-reads their replies. A full pass lists every
    root again, so whatever it did not see (deleted threads, dropped channels) is pruned."""

    cheap_ids = False

    def __init__(self, source: SourceConfig, settings: TeamsSettings) -> None:
        self.source, self.settings = source, settings
        self.base = (source.url or GRAPH).rstrip("/") + "/"
        self.label = f"Source '{source.name}' (Teams)"
        s = settings
        self._token = SourceToken(EntraApp(
            s.tenant_id, s.client_id, SecretStr(source.token) if source.token else None,
            s.certificate_path, "", s.certificate_password, s.authority or PUBLIC_CLOUD,
            s.timeout_s), NAMES, self.label)

    @asynccontextmanager
    async def graph(self) -> AsyncIterator[TeamsGraph]:
        """Graph through the app's token: wrong credentials stop here, before any read."""
        async with httpx.AsyncClient(base_url=self.base, timeout=self.settings.timeout_s) as http:
            http.auth = auth = RenewingToken(self._token)
            await auth.renew()
            http.headers["User-Agent"] = "sift-sync"
            client = self.settings.client(http, label=self.label, auth_hint=(
                f"the app's Graph permissions: {GRANT}"))
            yield TeamsGraph(client, self.base, self.label)

    # --- teams and channels ----------------------------------------------------------------

    async def resolve(self, api: TeamsGraph) -> tuple[list[Channel], list[DocumentFailure]]:
        """The channels to read, and a failure naming each listed team or channel that
        cannot be read. Names are resolved once per run."""
        teams, failures = await self.listed_teams(api)
        channels: list[Channel] = []
        named: set[str] = set()
        for team in teams:
            try:
                chosen, found = self.pick(await api.channels(team))
            except ChannelUnreadable as exc:
                failures.append(self._unreadable(f"team {team.name}", exc))
                continue
            channels += chosen
            named |= found
        for ref in self._wanted_channels():
            if ref not in named and ref.casefold() not in named:
                failures.append(DocumentFailure(f"channel:{ref}", f"{self.label}: no channel "
                                                f"{ref} in the listed teams (deleted, or "
                                                "misspelt?): check `teams.channels` and "
                                                "`teams.teams`"))
        return channels, failures

    async def listed_teams(self, api: TeamsGraph) -> tuple[list[Team], list[DocumentFailure]]:
        """`teams.teams` as Graph's teams (ids, or display names listed once)."""
        failures: list[DocumentFailure] = []
        teams: list[Team] = []
        by_name: dict[str, Team] | None = None
        for ref in dict.fromkeys(r.strip() for r in self.settings.teams if r.strip()):
            if by_name is None:
                listed = await api.teams()
                by_name = {t.name.casefold(): t for t in listed} | {t.id: t for t in listed}
            team = by_name.get(ref) or by_name.get(ref.casefold())
            if team is None:
                failures.append(DocumentFailure(f"team:{ref}", f"{self.label}: Graph lists no "
                                                f"team named {ref}: check `teams.teams`"))
            else:
                teams.append(team)
        return teams, failures

    def _wanted_channels(self) -> list[str]:
        return [c.strip().lstrip("#") for c in self.settings.channels if c.strip()]

    def pick(self, listed: list[Channel]) -> tuple[list[Channel], set[str]]:
        """Which of a team's channels this source reads (the listed ones, else every standard
        channel), and the `teams.channels` references they answered to."""
        wanted = self._wanted_channels()
        refs = set(wanted) | {w.casefold() for w in wanted}
        chosen, named = [], set()
        for channel in listed:
            found = {channel.id, channel.name, channel.name.casefold()} & refs
            if found or (not wanted and channel.standard):
                chosen.append(channel)
                named |= found
        return chosen, named

    def _unreadable(self, where: str, exc: ChannelUnreadable) -> DocumentFailure:
        return DocumentFailure(f"channel:{where}", f"{self.label}: {exc.user_message}")

    # --- documents -------------------------------------------------------------------------

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        async for item in self.changes(None):
            if not isinstance(item, Checkpoint):
                yield item

    async def changes(self, cursor: str | None) -> AsyncIterator[Fetched | Checkpoint]:
        links = _load(cursor)
        async with self.graph() as api:
            channels, failures = await self.resolve(api)
            for failure in failures:
                yield failure
            complete, notes = True, list[str]()
            for channel in channels:
                key = f"{channel.team.id}/{channel.id}"
                complete = complete and key not in links
                try:
                    async for item in self._channel(api, channel, links, key, notes):
                        yield item
                except ChannelUnreadable as exc:
                    yield self._unreadable(f"#{channel.name}", exc)
        yield Checkpoint(json.dumps({"channels": links}), complete=complete,
                         warnings=tuple(notes))

    async def _channel(self, api: TeamsGraph, channel: Channel, links: dict[str, str],
                       key: str, notes: list[str]) -> AsyncIterator[Fetched]:
        """The channel's changed threads; from scratch, every thread: Graph's delta reaches
        eight months back, so the roots come from the plain listing and the delta (walked
        first, so that what changes meanwhile comes again) only gives the next link."""
        link = links.get(key)
        try:
            delta = await api.delta(channel, link)
        except DeltaExpired:
            notes.append(f"#{channel.name} in {channel.team.name}: Graph no longer honoured "
                         "the stored delta token (HTTP 410); it was listed again from scratch")
            link, delta = None, await api.delta(channel, None)
        roots = delta.roots if link is not None else await api.roots(channel)
        for root in roots:
            doc_id = f"{channel.id}/{root.id}"
            if root.deleted:
                yield DocumentGone(doc_id)
                continue
            if root.kind != "message":  # members added, channel renamed: no knowledge
                continue
            thread = [root, *await api.replies(channel, root.id)]
            doc = self._document(channel, root, thread)
            if doc is not None:
                yield doc
            elif link is not None:  # it was worth indexing once, perhaps: not any more
                yield DocumentGone(doc_id)
        links[key] = delta.link  # only once the whole channel was read

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        """Threads by id (`<channel id>/<root id>`), as Graph's notifications name them. Ids
        of channels this source does not read are passed over; a thread Graph no longer has,
        or that no longer qualifies, leaves."""
        async with self.graph() as api:
            by_id = {c.id: c for c in (await self.resolve(api))[0]}
            for doc_id in doc_ids:
                channel_id, _, root_id = doc_id.rpartition("/")
                channel = by_id.get(channel_id)
                if channel is None or not root_id:
                    continue
                try:
                    root = await api.message(channel, root_id)
                    thread = ([root, *await api.replies(channel, root.id)]
                              if root is not None and not root.deleted else [])
                except ChannelUnreadable as exc:
                    yield self._unreadable(f"#{channel.name}", exc)
                    continue
                doc = self._document(channel, thread[0], thread) if thread else None
                yield doc if doc is not None else DocumentGone(doc_id)

    async def list_ids(self) -> set[str]:
        ids: set[str] = set()
        async with self.graph() as api:
            for channel in (await self.resolve(api))[0]:
                try:
                    roots = await api.roots(channel)
                except ChannelUnreadable:
                    continue  # reported by the listing; its threads leave with it
                ids |= {f"{channel.id}/{r.id}" for r in roots if not r.deleted}
        return ids

    def _wanted(self, m: Message) -> bool:
        """Never Sift's own words; other apps only when listed; no events or deleted ones."""
        if m.kind != "message" or m.deleted:
            return False
        if m.app_id:
            return m.app_id != self.settings.app_id and m.app_id in self.settings.bots
        return True

    def _document(self, channel: Channel, root: Message, thread: list[Message]
                  ) -> SourceDocument | None:
        spoken = [(m, text) for m in thread if self._wanted(m) and (text := to_markdown(m))]
        if not spoken or (len(spoken) == 1 and len(spoken[0][1]) < self.settings.min_chars):
            return None
        return thread_document(channel, root, spoken)


def _load(cursor: str | None) -> dict[str, str]:
    """The stored deltaLinks per channel; an unreadable cursor means a listing from scratch."""
    try:
        state: Any = json.loads(cursor) if cursor else {}
    except ValueError:
        return {}
    links = state.get("channels") if isinstance(state, dict) else None
    return {str(k): str(v) for k, v in links.items()} if isinstance(links, dict) else {}


def build(source: SourceConfig, settings: TeamsSettings) -> TeamsConnector:
    needed = ((source.token or settings.certificate_path, "token",
               "the app's client secret (SIFT_TEAMS_APP_PASSWORD), or "
               "`teams.certificate_path`"),
              (settings.tenant_id, "teams.tenant_id", "the tenant id, SIFT_TEAMS_TENANT_ID"),
              (settings.client_id, "teams.client_id", "the app id, SIFT_TEAMS_APP_ID"),
              (settings.teams, "teams.teams", "the teams to read, by id or name"))
    for value, setting, what in needed:
        if not value:
            raise ConfigError(f"source {source.name} has no {setting}", user_message=f"Source "
                              f"'{source.name}' is teams but has no `{setting}` ({what}).")
    return TeamsConnector(source, settings)


def push(source: SourceConfig, settings: TeamsSettings) -> TeamsReceiver:
    return TeamsReceiver(settings.client_state)


SPEC = ConnectorSpec("teams", TeamsSettings, build, "Microsoft Teams channel threads and "
                     "messages through Microsoft Graph", push=push)
