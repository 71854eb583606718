"""A local fake of the Slack Web API: real HTTP under /api/, documented responses, every call
recorded, and a small message store so that conversations.replies sees what was posted."""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

from tests.fakes.http import LocalServer
from tests.fakes.slack_channels import SlackChannels, page
from tests.fakes.slack_payloads import APP_ID, APP_TOKEN, BOT_ID, BOT_TOKEN, BOT_USER, TEAM

Json = dict[str, Any]


@dataclass
class Call:
    method: str  # Web API method, e.g. "chat.postMessage"
    args: Json  # from the query string, a form body or a JSON body
    headers: dict[str, str]
    http_method: str
    at: float = field(default_factory=time.monotonic)  # when it arrived, for ordering in time
    peer: str = ""  # the caller's "host:port": one per connection it opened


@dataclass
class Failure:
    error: str = "internal_error"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def _ts_key(ts: str) -> int:
    seconds, _, micros = ts.partition(".")
    return int(seconds) * 1_000_000 + int(micros.ljust(6, "0")[:6] or 0)


def _chunks_text(args: Json) -> str:
    text = args.get("markdown_text") or ""
    for chunk in args.get("chunks") or []:
        if chunk.get("type") == "markdown_text":
            text += chunk.get("text", "")
    return text


class FakeSlack(SlackChannels, LocalServer):
    def __init__(self, token: str = BOT_TOKEN, app_token: str = APP_TOKEN) -> None:
        super().__init__()
        self.token = token
        self.app_token = app_token  # Socket Mode: apps.connections.open takes the xapp token
        self.sockets: list[web.WebSocketResponse] = []
        self.socket_acks: list[Json] = []  # what the client sent back over the socket
        self.calls: list[Call] = []
        self.messages: dict[str, list[Json]] = {}  # channel -> messages, in posting order
        # Indexes over `messages` (written only through _store), so that a long load run's
        # fake answers in constant time instead of scanning every message so far.
        self._by_ts: dict[tuple[str, str], Json] = {}  # (channel, ts) -> the first such message
        self._threads: dict[tuple[str, str], list[Json]] = {}  # (channel, root ts) -> messages
        self.reactions: set[tuple[str, str, str]] = set()  # (channel, ts, name)
        self.failures: dict[str, deque[Failure]] = {}
        self.delays: dict[str, float] = {}  # method -> seconds before its reply (slow Slack)
        self.latency_s = 0.0  # before every other method's reply (Slack's round trip)
        self._last = 1_700_000_000 * 1_000_000  # microseconds
        self.users: dict[str, Json] = {}  # user id -> user object (users.info)
        self.usergroups: list[Json] = []  # usergroup objects, each with its "users"
        self.channels_init()  # channels, members (tests/fakes/slack_channels.py)
        self.app.router.add_route("*", "/api/{method}", self._handle)
        self.app.router.add_get("/link", self._socket)
        self.files: dict[str, bytes] = {}  # file id -> bytes, served at url_private_download
        self.downloads: list[tuple[str, str]] = []  # (file id, Authorization header)
        self.app.router.add_get("/files-pri/{team_file}/download/{name}", self._download)

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    # --- test helpers ---------------------------------------------------------------------

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def fail(self, method: str, failure: Failure | None = None, times: int = 1) -> None:
        self.failures.setdefault(method, deque()).extend([failure or Failure()] * times)

    def slow(self, method: str, seconds: float) -> None:
        """Reply to `method` only after `seconds`, as Slack does on a bad day."""
        self.delays[method] = seconds

    def add_message(self, channel: str, user: str, text: str, ts: str, thread_ts: str = "",
                    bot_id: str = "") -> Json:
        """A message people (or other bots) wrote, so that conversations.replies returns it."""
        message = {"type": "message", "user": user, "text": text, "ts": ts}
        if thread_ts:
            message["thread_ts"] = thread_ts
        if bot_id:
            message["bot_id"] = bot_id
        return self._store(channel, message)

    def add_file(self, name: str, data: bytes, mimetype: str, *, user: str) -> Json:
        """A file someone shared, as the file object of a message's `files` describes it
        (docs.slack.dev/reference/objects/file-object); its bytes need the bot token."""
        file_id = f"F{len(self.files) + 1:08d}"
        self.files[file_id] = data
        base = f"{self.url}/files-pri/{TEAM}-{file_id}"
        return {"id": file_id, "created": 1700000000, "timestamp": 1700000000, "name": name,
                "title": name, "mimetype": mimetype, "filetype": name.rsplit(".", 1)[-1],
                "pretty_type": mimetype, "user": user, "user_team": TEAM, "editable": False,
                "size": len(data), "mode": "hosted", "is_external": False,
                "external_type": "", "is_public": False, "public_url_shared": False,
                "url_private": f"{base}/{name}",
                "url_private_download": f"{base}/download/{name}",
                "permalink": f"https://acme.slack.com/files/{user}/{file_id}/{name}"}

    async def _download(self, request: web.Request) -> web.Response:
        """Without the bot token, Slack answers a file address with its sign-in page."""
        file_id = request.match_info["team_file"].split("-", 1)[-1]
        auth = request.headers.get("Authorization", "")
        self.downloads.append((file_id, auth))
        if auth != f"Bearer {self.token}" or file_id not in self.files:
            return web.Response(text="<html>Sign in to Slack</html>", content_type="text/html")
        return web.Response(body=self.files[file_id],
                            content_type="application/octet-stream")

    def _store(self, channel: str, message: Json) -> Json:
        self.messages.setdefault(channel, []).append(message)
        self._by_ts.setdefault((channel, message["ts"]), message)
        root = message.get("thread_ts") or message["ts"]
        self._threads.setdefault((channel, root), []).append(message)
        self._last = max(self._last, _ts_key(message["ts"]))
        return message

    def add_user(self, user: str, email: str = "", name: str = "") -> None:
        """A workspace member; without `email` the profile has none (no users:read.email)."""
        name = name or user.lower()
        profile: Json = {"real_name": name.title(), "display_name": name,
                         "image_24": "https://a.slack-edge.com/avatar-24.png"}
        if email:
            profile["email"] = email
        self.users[user] = {"id": user, "team_id": TEAM, "name": name, "deleted": False,
                            "real_name": name.title(), "is_bot": False, "profile": profile}

    def add_usergroup(self, group_id: str, handle: str, users: list[str]) -> None:
        self.usergroups.append({
            "id": group_id, "team_id": TEAM, "is_usergroup": True, "name": handle.title(),
            "description": "", "handle": handle, "is_external": False,
            "date_create": 1446598059, "date_update": 1446670362, "date_delete": 0,
            "auto_type": None, "created_by": "U060RNRCZ", "updated_by": "U060RNRCZ",
            "deleted_by": None, "prefs": {"channels": [], "groups": []},
            "users": list(users), "user_count": str(len(users))})

    def posted(self, channel: str) -> list[Json]:
        return [m for m in self.messages.get(channel, []) if m.get("bot_id") == BOT_ID]

    async def wait_for(self, method: str, count: int = 1, timeout_s: float = 10.0) -> list[Call]:
        deadline = time.monotonic() + timeout_s
        while len(self.calls_to(method)) < count:
            if time.monotonic() > deadline:
                seen = [c.method for c in self.calls]
                raise AssertionError(f"expected {count} {method} calls; saw {seen}")
            await asyncio.sleep(0.01)
        return self.calls_to(method)

    async def stop(self) -> None:
        for socket in self.sockets:
            await socket.close()
        await super().stop()

    # --- Socket Mode ----------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self.sockets.append(socket)
        await socket.send_json({"type": "hello", "num_connections": 1,
                                "debug_info": {"host": "fake", "approximate_connection_time": 3600},
                                "connection_info": {"app_id": APP_ID}})
        async for frame in socket:
            if frame.type == WSMsgType.TEXT:
                self.socket_acks.append(json.loads(frame.data))
        return socket

    async def push(self, payload: Json, *, envelope_id: str, retry_attempt: int = 0,
                   to: int = -1) -> None:
        """An Events API envelope over an open socket (docs.slack.dev, Socket Mode): the
        latest one, or socket number `to` (an app with several connections gets each
        envelope on one of them, and a redelivery may come on another)."""
        for _ in range(500):
            if len(self.sockets) > max(to, 0):
                break
            await asyncio.sleep(0.01)
        await self.sockets[to].send_json({
            "envelope_id": envelope_id, "type": "events_api", "payload": payload,
            "accepts_response_payload": False, "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else ""})

    # --- the API ----------------------------------------------------------------------------

    def _ts(self) -> str:
        """Just after every message seen so far: Slack's clock as the test's timestamps tell it."""
        self._last += 1
        return f"{self._last // 1_000_000}.{self._last % 1_000_000:06d}"

    async def _args(self, request: web.Request) -> Json:
        args: Json = dict(request.query)
        raw = await request.text()
        if raw and request.content_type == "application/json":
            args.update(json.loads(raw))
        elif raw:
            args.update(parse_qsl(raw))
        return args

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        response = await self._respond(method, request)
        # Slack's round trip: what the call did is seen at once, its reply comes late.
        delay = self.delays.get(method, self.latency_s)
        if delay:
            await asyncio.sleep(delay)
        return response

    async def _respond(self, method: str, request: web.Request) -> web.Response:
        args = await self._args(request)
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.calls.append(Call(method, args, dict(request.headers), request.method,
                               peer=f"{peer[0]}:{peer[1]}" if peer else ""))
        token = self.app_token if method == "apps.connections.open" else self.token
        if request.headers.get("Authorization") != f"Bearer {token}":
            return web.json_response({"ok": False, "error": "invalid_auth"})
        queued = self.failures.get(method)
        if queued:
            failure = queued.popleft()
            return web.json_response({"ok": False, "error": failure.error},
                                     status=failure.status, headers=failure.headers)
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        body = handler(args) if handler else {}
        return web.json_response({"ok": True, **body} if body.get("ok") is None else body)

    def _auth_test(self, args: Json) -> Json:
        return {"url": "https://acme.slack.com/", "team": "Acme", "user": "sift",
                "team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID,
                "is_enterprise_install": False}

    def _bot_message(self, args: Json, text: str) -> Json:
        message = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "text": text,
                   "ts": self._ts(), "blocks": args.get("blocks") or []}
        if args.get("thread_ts"):
            message["thread_ts"] = args["thread_ts"]
        return self._store(args["channel"], message)

    def _find(self, channel: str, ts: str) -> Json | None:
        return self._by_ts.get((channel, ts))

    def _chat_postMessage(self, args: Json) -> Json:
        """A user id as `channel` posts in the app's DM with that person, and the response
        names the DM's own id (docs.slack.dev chat.postMessage); here D + the user id's rest."""
        if str(args.get("channel", ""))[:1] in ("U", "W"):
            args = {**args, "channel": "D" + args["channel"][1:]}
        message = self._bot_message(args, args.get("text", ""))
        return {"channel": args["channel"], "ts": message["ts"], "message": message}

    def _chat_update(self, args: Json) -> Json:
        message = self._find(args["channel"], args["ts"])
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        message.update(text=args.get("text", ""), blocks=args.get("blocks") or [])
        return {"channel": args["channel"], "ts": args["ts"], "text": message["text"]}

    def _chat_getPermalink(self, args: Json) -> Json:
        """docs.slack.dev chat.getPermalink: the message's archive link."""
        channel, ts = args.get("channel", ""), args.get("message_ts", "")
        found = self._find(channel, ts)
        if found is None:
            return {"ok": False, "error": "message_not_found"}
        link = f"https://acme.slack.com/archives/{channel}/p{ts.replace('.', '')}"
        if found.get("thread_ts") and found["thread_ts"] != ts:
            link += f"?thread_ts={found['thread_ts']}&cid={channel}"
        return {"channel": channel, "permalink": link}

    def _chat_postEphemeral(self, args: Json) -> Json:
        return {"message_ts": self._ts()}

    def _reactions_add(self, args: Json) -> Json:
        key = (args["channel"], args["timestamp"], args["name"])
        if key in self.reactions:
            return {"ok": False, "error": "already_reacted"}
        self.reactions.add(key)
        return {}

    def _reactions_remove(self, args: Json) -> Json:
        key = (args["channel"], args["timestamp"], args["name"])
        if key not in self.reactions:
            return {"ok": False, "error": "no_reaction"}
        self.reactions.discard(key)
        return {}

    def _conversations_replies(self, args: Json) -> Json:
        channel, ts = args["channel"], args["ts"]
        refused = self._readable(args) if channel in self.channels else None
        if refused:
            return refused
        found = self._find(channel, ts)
        if found is None:
            return {"ok": False, "error": "thread_not_found"}
        if found.get("thread_ts", ts) != ts:  # a reply: Slack returns just that message
            thread = [found]
        else:
            thread = sorted(self._threads[channel, ts], key=lambda m: _ts_key(m["ts"]))
        chunk, cursor = page(thread, args, default=1000)
        return {"messages": chunk, "has_more": bool(cursor),
                "response_metadata": {"next_cursor": cursor}}

    def _users_info(self, args: Json) -> Json:
        user = self.users.get(args.get("user", ""))
        if user and str(args.get("include_locale", "")).lower() not in ("true", "1"):
            user = {k: v for k, v in user.items() if k != "locale"}  # only when asked for
        return {"user": user} if user else {"ok": False, "error": "user_not_found"}

    def _usergroups_list(self, args: Json) -> Json:
        listed = [{k: v for k, v in g.items() if k != "users"} for g in self.usergroups]
        if str(args.get("include_users", "")).lower() in ("true", "1"):
            listed = [dict(g) for g in self.usergroups]
        return {"usergroups": listed}

    def _usergroups_users_list(self, args: Json) -> Json:
        group = next((g for g in self.usergroups if g["id"] == args.get("usergroup")), None)
        if group is None:
            return {"ok": False, "error": "no_such_subteam"}
        return {"users": list(group["users"])}

    def _apps_connections_open(self, args: Json) -> Json:
        return {"url": f"ws://127.0.0.1:{self.port}/link?ticket=fake-ticket"}

    def _assistant_threads_setStatus(self, args: Json) -> Json:
        return {}

    def _views_publish(self, args: Json) -> Json:
        view = args.get("view")
        view = json.loads(view) if isinstance(view, str) else view
        return {"view": {"id": "VMHU10V25", "team_id": TEAM, "type": "home", **(view or {})}}

    def _chat_startStream(self, args: Json) -> Json:
        message = self._bot_message(args, _chunks_text(args))
        return {"channel": args["channel"], "ts": message["ts"]}

    def _chat_appendStream(self, args: Json) -> Json:
        message = self._find(args["channel"], args["ts"])
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        message["text"] += _chunks_text(args)
        return {"channel": args["channel"], "ts": args["ts"]}

    def _chat_stopStream(self, args: Json) -> Json:
        message = self._find(args["channel"], args["ts"])
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        message["text"] += _chunks_text(args)
        message["blocks"] = args.get("blocks") or []
        return {"channel": args["channel"], "ts": args["ts"], "message": message}
