"""A fake of Microsoft Graph's Teams reads (teams, channels, their members, channel messages'
delta and replies) beside a fake Entra for its tokens; payloads as Graph's v1.0 reference
shows them (chatMessage, channel, aadUserConversationMember; @odata.nextLink/deltaLink)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from aiohttp import web

from tests.fakes.entra_server import CLIENT_ID, SECRET, TENANT, TOKEN
from tests.fakes.graph_server import GraphWithEntra
from tests.fakes.teams_messages import CARD, Sent, card, chat_message, file, iso

__all__ = ["CARD", "CLIENT_ID", "SECRET", "TENANT", "TOKEN", "FakeTeamsGraph", "card", "file"]
Json = dict[str, Any]
MAX_TOP = 50  # the documented upper limit of $top for delta and replies
TEAMS_TOP = 20  # pages of teams, channels and members (Graph's own page size varies)


def _token(state: Json) -> str:
    return base64.urlsafe_b64encode(json.dumps(state).encode()).decode()


def _state(token: str) -> Json:
    loaded: Json = json.loads(base64.urlsafe_b64decode(token.encode()))
    return loaded


@dataclass
class Channel:
    id: str
    name: str
    membership: str = "standard"  # standard, private or shared
    members: list[str] = field(default_factory=list)  # user ids (private and shared)
    roots: list[Json] = field(default_factory=list)
    replies: dict[str, list[Json]] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)  # root id -> change number


@dataclass
class Team:
    id: str
    name: str
    members: list[str] = field(default_factory=list)
    channels: dict[str, Channel] = field(default_factory=dict)


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message,
                                        "innerError": {"request-id": "fake"}}}, status=status)


class FakeTeamsGraph(GraphWithEntra):
    """One tenant's teams. `forbidden` holds team ids, or `team/channel` ids, that answer 403
    (the app has no permission there); `calls` every path asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.teams: dict[str, Team] = {}
        self.users: dict[str, Json] = {}
        self.forbidden: set[str] = set()
        self.next_base = ""  # where nextLinks point ("": this server): a hostile Graph's test
        self.calls: list[str] = []
        self.clock = 1767000000000  # message ids are the milliseconds they were posted at
        self.change = 0
        # Delta lists only the last eight months: a first delta leaves out roots posted
        # before this (ms); the channel's plain message listing has them all.
        self.delta_since_ms = 0
        self.expired_below = 0  # deltatokens under this change number answer 410
        self.throttle = 0  # this many delta requests answer 429 with Retry-After: 1
        r = self.app.router
        base = "/v1.0/teams"
        r.add_get(base, self._teams)
        r.add_get(base + "/{team}/members", self._team_members)
        r.add_get(base + "/{team}/channels", self._channels)
        r.add_get(base + "/{team}/channels/{channel}", self._channel)
        r.add_get(base + "/{team}/channels/{channel}/members", self._channel_members)
        r.add_get(base + "/{team}/channels/{channel}/messages", self._messages)
        r.add_get(base + "/{team}/channels/{channel}/messages/delta", self._delta)
        r.add_get(base + "/{team}/channels/{channel}/messages/{id}", self._message)
        r.add_get(base + "/{team}/channels/{channel}/messages/{id}/replies", self._replies)

    # --- the tenant, as a test builds it ---------------------------------------------------

    def add_user(self, user_id: str, name: str, email: str) -> None:
        self.users[user_id] = {"id": user_id, "displayName": name, "email": email}

    def add_team(self, team_id: str, name: str, members: list[str]) -> Team:
        self.teams[team_id] = Team(team_id, name, list(members))
        return self.teams[team_id]

    def add_channel(self, team_id: str, channel_id: str, name: str, *,
                    membership: str = "standard", members: list[str] | None = None
                    ) -> Channel:
        channel = Channel(channel_id, name, membership, list(members or []))
        self.teams[team_id].channels[channel_id] = channel
        return channel

    def remove_channel(self, team_id: str, channel_id: str) -> None:
        del self.teams[team_id].channels[channel_id]

    def _stamp(self) -> int:
        self.clock += 1000
        return self.clock

    def post(self, team_id: str, channel_id: str, user: str | None, html: str, *,
             reply_to: str | None = None, app: Json | None = None,
             content_type: str = "html", mentions: list[str] | None = None,
             attachments: list[Json] | None = None, message_type: str = "message") -> str:
        """A message (a reply when `reply_to`), from a user or an `app` ({id, displayName});
        `mentions` are user ids, written into `html` as `<at id="n">Name</at>` by the caller."""
        channel = self.teams[team_id].channels[channel_id]
        ms = self._stamp()
        message_id = str(ms)
        sender = None if user is None else self.users[user]
        raw = chat_message(Sent(team_id, channel_id, ms, reply_to, message_type, sender, app,
                                html, content_type),
                           [self.users[u] for u in mentions or []], attachments or [])
        if reply_to is None:
            channel.roots.append(raw)
            channel.replies[message_id] = []
        else:
            channel.replies[reply_to].append(raw)
        self._touch(channel, reply_to or message_id)
        return message_id

    def system_event(self, team_id: str, channel_id: str) -> str:
        """A member-added event: messageType systemEventMessage, an eventDetail, no sender."""
        message_id = self.post(team_id, channel_id, None, "<systemEventMessage/>",
                               message_type="systemEventMessage")
        self.teams[team_id].channels[channel_id].roots[-1]["eventDetail"] = {
            "@odata.type": "#microsoft.graph.membersAddedEventMessageDetail",
            "visibleHistoryStartDateTime": "0001-01-01T00:00:00Z", "members": [],
            "initiator": None}
        return message_id

    def _find(self, channel: Channel, message_id: str) -> tuple[Json, str]:
        for root in channel.roots:
            if root["id"] == message_id:
                return root, message_id
        for root_id, replies in channel.replies.items():
            for reply in replies:
                if reply["id"] == message_id:
                    return reply, root_id
        raise KeyError(message_id)

    def edit(self, team_id: str, channel_id: str, message_id: str, html: str) -> None:
        channel = self.teams[team_id].channels[channel_id]
        raw, root = self._find(channel, message_id)
        now = iso(self._stamp())
        raw["body"]["content"] = html
        raw["lastModifiedDateTime"] = raw["lastEditedDateTime"] = now
        self._touch(channel, root)

    def delete(self, team_id: str, channel_id: str, message_id: str) -> None:
        """Graph keeps a deleted message, with deletedDateTime and an empty body."""
        channel = self.teams[team_id].channels[channel_id]
        raw, root = self._find(channel, message_id)
        now = iso(self._stamp())
        raw["deletedDateTime"] = raw["lastModifiedDateTime"] = now
        raw["body"] = {"contentType": "text", "content": ""}
        raw["attachments"], raw["mentions"] = [], []
        self._touch(channel, root)

    def _touch(self, channel: Channel, root_id: str) -> None:
        """A reply chain changed (a post, a reply, an edit, a deletion): the next delta
        lists its root again."""
        self.change += 1
        channel.changed[root_id] = self.change

    # --- Graph's answers -------------------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        self.calls.append(request.path_qs)
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _error(401, "InvalidAuthenticationToken", "Access token validation "
                          "failure. Invalid audience.")
        team = request.match_info.get("team", "")
        channel = request.match_info.get("channel", "")
        if team in self.forbidden or f"{team}/{channel}" in self.forbidden:
            return _error(403, "Forbidden", "Missing role permissions on the request. API "
                          "requires one of 'ChannelMessage.Read.All, ChannelMessage.Read."
                          "Group'. Roles on the request ''.")
        if team and team not in self.teams:
            return _error(404, "NotFound", "No team found with Group Id " + team)
        if channel and channel not in self.teams[team].channels:
            return _error(404, "NotFound", "Channel not found")
        return None

    def _page(self, request: web.Request, items: list[Json], top: int, extra: Json
              ) -> web.Response:
        """`items` from the $skiptoken's offset, `top` a page, an @odata.nextLink while
        more remain; `extra` is merged into the last page (a deltaLink)."""
        token = request.query.get("$skiptoken")
        state = _state(token) if token else {"offset": 0, "top": top}
        offset, top = int(state["offset"]), int(state["top"])
        body: Json = {"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#"
                      "Collection(chatMessage)", "value": items[offset:offset + top]}
        if offset + top < len(items):
            next_state = {**state, "offset": offset + top}
            body["@odata.nextLink"] = f"{self.next_base or self.url}{request.path}" \
                                      f"?$skiptoken={_token(next_state)}"
        else:
            body.update(extra)
        return web.json_response(body)

    @staticmethod
    def _top(request: web.Request, default: int) -> int:
        return min(int(request.query.get("$top") or default), MAX_TOP)

    async def _teams(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        return refused or self._page(request, [
            {"id": t.id, "createdDateTime": "2025-01-01T00:00:00Z", "displayName": t.name,
             "description": f"The {t.name} team", "internalId": None, "classification": None,
             "specialization": None, "visibility": "private", "webUrl": None,
             "isArchived": False, "tenantId": TENANT, "isMembershipLimitedToOwners": None,
             "memberSettings": None, "guestSettings": None, "messagingSettings": None,
             "funSettings": None, "discoverySettings": None, "summary": None}
            for t in self.teams.values()], TEAMS_TOP, {})

    def _channel_json(self, team: Team, channel: Channel) -> Json:
        return {"id": channel.id, "createdDateTime": "2025-01-01T00:00:00Z",
                "displayName": channel.name, "description": None, "isFavoriteByDefault": None,
                "email": "", "tenantId": TENANT,
                "webUrl": (f"https://teams.microsoft.com/l/channel/{quote(channel.id)}/"
                           f"{quote(channel.name)}?groupId={team.id}&tenantId={TENANT}"),
                "membershipType": channel.membership}

    async def _channels(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused:
            return refused
        team = self.teams[request.match_info["team"]]
        return self._page(request, [self._channel_json(team, c)
                                    for c in team.channels.values()], TEAMS_TOP, {})

    async def _channel(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused:
            return refused
        team = self.teams[request.match_info["team"]]
        return web.json_response(self._channel_json(team, team.channels[
            request.match_info["channel"]]))

    def _members_json(self, users: list[str]) -> list[Json]:
        return [{"@odata.type": "#microsoft.graph.aadUserConversationMember",
                 "id": base64.b64encode(f"member#{u}".encode()).decode(), "roles": [],
                 "displayName": self.users[u]["displayName"], "userId": u,
                 "email": self.users[u]["email"], "tenantId": TENANT,
                 "visibleHistoryStartDateTime": "0001-01-01T00:00:00Z"} for u in users]

    async def _team_members(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        team = self.teams.get(request.match_info["team"])
        return refused or self._page(request, self._members_json(team.members if team else []),
                                     TEAMS_TOP, {})

    async def _channel_members(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused:
            return refused
        team = self.teams[request.match_info["team"]]
        channel = team.channels[request.match_info["channel"]]
        # A standard channel's members are the team's.
        users = team.members if channel.membership == "standard" else channel.members
        return self._page(request, self._members_json(users), TEAMS_TOP, {})

    async def _delta(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused:
            return refused
        channel = self.teams[request.match_info["team"]].channels[request.match_info["channel"]]
        token = request.query.get("$skiptoken")
        delta = request.query.get("$deltatoken")
        if self.throttle:
            self.throttle -= 1
            return web.json_response({"error": {"code": "TooManyRequests", "message":
                                      "Too many requests."}}, status=429,
                                     headers={"Retry-After": "1"})
        if delta and int(delta) < self.expired_below:
            return _error(410, "resyncRequired", "The delta token is no longer valid; "
                          "start a new round of synchronization.")
        if token:
            state = _state(token)
        else:
            state = {"offset": 0, "top": self._top(request, MAX_TOP),
                     "since": int(delta) if delta else 0, "upto": self.change}
        since, upto = int(state["since"]), int(state["upto"])
        roots = [r for r in channel.roots if since < channel.changed[r["id"]] <= upto
                 and (since or (r["deletedDateTime"] is None  # a first listing: live ones
                                and int(r["id"]) >= self.delta_since_ms))]
        link = f"{self.url}{request.path}?$deltatoken={upto}"
        if token is None:
            request = request.clone(rel_url=f"{request.path}?$skiptoken={_token(state)}")
        return self._page(request, roots, int(state["top"]), {"@odata.deltaLink": link})

    async def _messages(self, request: web.Request) -> web.Response:
        """Every root message of the channel, newest first (deleted ones too, as Graph
        keeps them), 50 a page at most."""
        refused = self._refused(request)
        if refused:
            return refused
        channel = self.teams[request.match_info["team"]].channels[request.match_info["channel"]]
        return self._page(request, list(reversed(channel.roots)),
                          self._top(request, 20), {})

    async def _message(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused:
            return refused
        channel = self.teams[request.match_info["team"]].channels[request.match_info["channel"]]
        for root in channel.roots:
            if root["id"] == request.match_info["id"]:
                return web.json_response(root)
        return _error(404, "NotFound", "Message not found")

    async def _replies(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused:
            return refused
        channel = self.teams[request.match_info["team"]].channels[request.match_info["channel"]]
        replies = channel.replies.get(request.match_info["id"])
        if replies is None:
            return _error(404, "NotFound", "Message not found")
        return self._page(request, list(reversed(replies)), self._top(request, MAX_TOP), {})

    def paths(self, fragment: str) -> list[str]:
        return [c for c in self.calls if fragment in c]
