"""Microsoft Graph reads for the Teams connector: teams, channels, members, messages' delta."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from rag.errors import SyncError
from sync.connectors.common.http_client import JsonClient, decode_json
from sync.connectors.common.microsoft import on_graph

MISSING = frozenset({403, 404})
GONE = frozenset({410})  # a delta token the service no longer honours
TOP = 50  # the largest page Graph serves of channel messages and replies
GRANT = ("grant the app ChannelMessage.Read.All (application, admin consent), or install "
         "Sift in that team so that its ChannelMessage.Read.Group consent applies")


class ChannelUnreadable(SyncError):
    """One team or channel cannot be read (no permission there, or it is gone)."""


class DeltaExpired(SyncError):
    """Graph no longer honours a stored deltaLink (HTTP 410): list the channel again."""


@dataclass(frozen=True)
class Team:
    id: str
    name: str


@dataclass(frozen=True)
class Channel:
    team: Team
    id: str
    name: str
    membership: str = "standard"  # private and shared channels have members of their own

    @property
    def standard(self) -> bool:
        return self.membership == "standard"


@dataclass(frozen=True)
class Member:
    user_id: str
    email: str


@dataclass(frozen=True)
class Attachment:
    kind: str  # Graph's contentType: reference (a file), a card's MIME type, ...
    name: str = ""
    content: str = ""  # a card's JSON


@dataclass(frozen=True)
class Message:
    """One chatMessage as the connector needs it (a delta's root, or a reply)."""

    id: str
    kind: str  # messageType: message, systemEventMessage, ...
    created: str
    modified: str
    deleted: bool
    html: str
    content_type: str
    url: str = ""
    author: str = ""
    user_id: str = ""
    app_id: str = ""  # from.application: a bot or an app posted it
    mentions: tuple[tuple[int, str], ...] = ()  # (id in the body's <at id>, display name)
    attachments: tuple[Attachment, ...] = ()


def _get(item: Any, *path: str) -> Any:
    for key in path:
        item = item.get(key) if isinstance(item, dict) else None
    return item


def message(raw: dict[str, Any]) -> Message:
    sender = _get(raw, "from", "user") or {}
    app = _get(raw, "from", "application") or {}
    mentions = tuple((int(m["id"]), str(m.get("mentionText") or _get(
        m, "mentioned", "user", "displayName") or "")) for m in raw.get("mentions") or ()
        if isinstance(m, dict) and str(m.get("id", "")).isdigit())
    attachments = tuple(Attachment(str(a.get("contentType") or ""), str(a.get("name") or ""),
                                   a["content"] if isinstance(a.get("content"), str) else "")
                        for a in raw.get("attachments") or () if isinstance(a, dict))
    return Message(
        id=str(raw.get("id") or ""), kind=str(raw.get("messageType") or ""),
        created=str(raw.get("createdDateTime") or ""),
        modified=str(raw.get("lastEditedDateTime") or raw.get("lastModifiedDateTime") or ""),
        deleted=raw.get("deletedDateTime") is not None,
        html=str(_get(raw, "body", "content") or ""),
        content_type=str(_get(raw, "body", "contentType") or "text"),
        url=str(raw.get("webUrl") or ""), author=str(sender.get("displayName") or ""),
        user_id=str(sender.get("id") or ""), app_id=str(app.get("id") or ""),
        mentions=mentions, attachments=attachments)


@dataclass(frozen=True)
class Delta:
    roots: list[Message]
    link: str


class TeamsGraph:
    """One run's reads; a 403 or 404 on a team or channel is ChannelUnreadable (reported by
    name, the rest syncs), anything else the JsonClient's one sentence. `base` is Graph's
    versioned root: every link Graph hands back must stay on it, the token goes with them."""

    def __init__(self, api: JsonClient, base: str, label: str) -> None:
        self.api, self.base, self.label = api, base, label

    def _own(self, link: str) -> str:
        return on_graph(link, self.base, self.label)

    async def _pages(self, url: str, where: str, params: dict[str, Any] | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        """Every page of a listing, following @odata.nextLink (on Graph's own host only)."""
        while url:
            response = await self.api.get(url, params, accept=MISSING | GONE)
            if response.status_code in GONE:
                raise DeltaExpired(f"{where}: HTTP 410 for {url}")
            if response.status_code in MISSING:
                raise _unreadable(response.status_code, where)
            body = decode_json(response)
            yield body if isinstance(body, dict) else {}
            follow = _get(body, "@odata.nextLink")
            url, params = (self._own(str(follow)) if follow else ""), None

    async def _values(self, url: str, params: dict[str, Any] | None = None,
                      where: str = "") -> AsyncIterator[dict[str, Any]]:
        async for page in self._pages(url, where, params):
            for raw in page.get("value") or ():
                if isinstance(raw, dict):
                    yield raw

    async def teams(self) -> list[Team]:
        return [Team(str(t["id"]), str(t.get("displayName") or t["id"]))
                async for t in self._values("teams", where="the list of teams") if t.get("id")]

    async def channels(self, team: Team) -> list[Channel]:
        return [_channel(team, c) async for c in self._values(
            f"teams/{team.id}/channels", where=f"team {team.name}") if c.get("id")]

    async def channel(self, team: Team, channel_id: str) -> Channel:
        response = await self.api.get(f"teams/{team.id}/channels/{channel_id}", accept=MISSING)
        if response.status_code in MISSING:
            raise _unreadable(response.status_code, f"channel {channel_id}")
        body = decode_json(response)
        return _channel(team, body if isinstance(body, dict) else {"id": channel_id})

    async def members(self, team: Team, channel: Channel | None = None) -> list[Member]:
        """Who is in the team, or in a private or shared channel (aadUserConversationMember)."""
        url = f"teams/{team.id}" + (f"/channels/{channel.id}" if channel else "") + "/members"
        where = f"#{channel.name}" if channel else f"team {team.name}"
        return [Member(str(m.get("userId") or "").casefold(),
                       str(m.get("email") or "").casefold())
                async for m in self._values(url, where=where)]

    async def delta(self, channel: Channel, link: str | None) -> Delta:
        """Root messages changed since `link` (None: every one), and the next deltaLink."""
        url = self._own(link) if link else (f"teams/{channel.team.id}/channels/{channel.id}"
                                            "/messages/delta")
        roots: dict[str, Message] = {}
        async for page in self._pages(url, f"#{channel.name}",
                                      None if link else {"$top": TOP}):
            for raw in page.get("value") or ():
                if isinstance(raw, dict) and raw.get("id"):
                    roots.pop(str(raw["id"]), None)  # listed twice: the last one counts
                    roots[str(raw["id"])] = message(raw)
            if page.get("@odata.deltaLink"):
                return Delta(list(roots.values()), self._own(str(page["@odata.deltaLink"])))
        raise SyncError(f"delta of {channel.id} ended without a deltaLink", user_message=(
            f"{self.label}: Graph's delta listing of #{channel.name} ended without a "
            "deltaLink."))

    async def message(self, channel: Channel, message_id: str) -> Message | None:
        """One root message, None when Graph no longer has it."""
        response = await self.api.get(f"teams/{channel.team.id}/channels/{channel.id}/"
                                      f"messages/{message_id}", accept=MISSING)
        if response.status_code == 404:
            return None
        if response.status_code in MISSING:
            raise _unreadable(response.status_code, f"#{channel.name}")
        body = decode_json(response)
        return message(body) if isinstance(body, dict) else None

    async def roots(self, channel: Channel) -> list[Message]:
        """Every root message of the channel, however old (delta reaches eight months back)."""
        url = f"teams/{channel.team.id}/channels/{channel.id}/messages"
        return [message(r) async for r in self._values(url, {"$top": TOP}, f"#{channel.name}")
                if r.get("id")]

    async def replies(self, channel: Channel, root: str) -> list[Message]:
        """Every reply of a thread (pages of 50), oldest first."""
        url = f"teams/{channel.team.id}/channels/{channel.id}/messages/{root}/replies"
        found = [message(r) async for r in self._values(url, {"$top": TOP},
                                                        f"#{channel.name}")]
        return sorted(found, key=lambda m: (m.created, m.id))


def _channel(team: Team, raw: dict[str, Any]) -> Channel:
    return Channel(team, str(raw.get("id") or ""), str(raw.get("displayName") or raw.get("id")
                                                       or ""),
                   str(raw.get("membershipType") or "standard"))


def _unreadable(status: int, where: str) -> ChannelUnreadable:
    if status == 403:
        return ChannelUnreadable(f"{where}: HTTP 403", user_message=(
            f"Graph refused to read {where} (HTTP 403): {GRANT}"))
    return ChannelUnreadable(f"{where}: HTTP 404", user_message=(
        f"Graph has no {where} (HTTP 404): it was deleted, or the id is wrong"))
