"""The fake Slack Web API's channel reads: conversations.history/info/list/members, bots.info,
users.lookupByEmail, with the fields and error codes docs.slack.dev documents for them."""

from __future__ import annotations

import base64
from typing import Any

from tests.fakes.slack_payloads import APP_ID, BOT_ID, BOT_USER, TEAM

Json = dict[str, Any]


def _key(ts: str) -> float:
    return float(ts)


def _cursor(offset: int) -> str:
    return base64.b64encode(f"next_ts:{offset}".encode()).decode()


def _offset(cursor: str) -> int:
    return int(base64.b64decode(cursor).decode().partition(":")[2]) if cursor else 0


def page(items: list[Any], args: Json, default: int = 100) -> tuple[list[Any], str]:
    """One page of `items` by Slack's cursor rules: `limit`, then `next_cursor` ("" at the end)."""
    start, limit = _offset(str(args.get("cursor") or "")), int(args.get("limit") or default)
    chunk = items[start:start + limit]
    return chunk, _cursor(start + limit) if start + limit < len(items) else ""


class SlackChannels:
    """Mixed into FakeSlack: channels the workspace has, who is in them, and their history
    (the messages FakeSlack stores, Sift's own answers included)."""

    messages: dict[str, list[Json]]
    _threads: dict[tuple[str, str], list[Json]]
    users: dict[str, Json]
    _by_ts: dict[tuple[str, str], Json]

    def channels_init(self) -> None:
        self.channels: dict[str, Json] = {}
        self.members: dict[str, list[str]] = {}

    def add_channel(self, channel_id: str, name: str, *, private: bool = False,
                    member: bool = True, members: list[str] | None = None) -> Json:
        """A channel (conversation object as conversations.info returns it); `member`: the
        bot was invited."""
        people = list(members or [])
        if member:
            people.append(BOT_USER)
        self.members[channel_id] = people
        self.channels[channel_id] = {
            "id": channel_id, "name": name, "is_channel": not private, "is_group": False,
            "is_im": False, "is_mpim": False, "is_private": private, "created": 1449252889,
            "is_archived": False, "is_general": False, "unlinked": 0,
            "name_normalized": name, "is_shared": False, "is_org_shared": False,
            "is_ext_shared": False, "is_pending_ext_shared": False, "pending_shared": [],
            "context_team_id": TEAM, "updated": 1678229664302, "parent_conversation": None,
            "creator": "W012A3CDE", "is_member": member,
            "topic": {"value": "", "creator": "", "last_set": 0},
            "purpose": {"value": "", "creator": "", "last_set": 0}, "previous_names": []}
        return self.channels[channel_id]

    def post(self, channel: str, message: Json) -> Json:
        """Any message as Slack stores it (subtypes, bot_profile, files, blocks, edited)."""
        stored: Json = self._store(channel, {"type": "message", **message})  # type: ignore[attr-defined]
        return stored

    def remove(self, channel: str, ts: str) -> None:
        """A message deleted in Slack: gone from history and its thread."""
        self.messages[channel] = [m for m in self.messages.get(channel, []) if m["ts"] != ts]
        for (where, _), thread in self._threads.items():
            if where == channel:
                thread[:] = [m for m in thread if m["ts"] != ts]
        self._by_ts.pop((channel, ts), None)

    def _readable(self, args: Json) -> Json | None:
        channel = self.channels.get(str(args.get("channel") or ""))
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        if channel["is_private"] and not channel["is_member"]:
            return {"ok": False, "error": "channel_not_found"}  # Slack hides it
        if not channel["is_member"]:
            return {"ok": False, "error": "not_in_channel"}
        return None

    def _root(self, channel: str, message: Json) -> Json:
        """A top-level message as history shows it: a thread's root with its reply fields."""
        thread = [m for m in self._threads.get((channel, message["ts"]), [])
                  if m["ts"] != message["ts"]]
        if not thread:
            return message
        users = list(dict.fromkeys(m.get("user", "") for m in thread if m.get("user")))
        return {**message, "thread_ts": message["ts"], "reply_count": len(thread),
                "reply_users_count": len(users), "reply_users": users,
                "latest_reply": max(thread, key=lambda m: _key(m["ts"]))["ts"],
                "is_locked": False, "subscribed": False}

    def _conversations_history(self, args: Json) -> Json:
        refused = self._readable(args)
        if refused:
            return refused
        channel = args["channel"]
        oldest = float(args.get("oldest") or 0)
        latest = float(args.get("latest") or 9e12)
        top = [self._root(channel, m) for m in self.messages.get(channel, [])
               if m.get("thread_ts", m["ts"]) == m["ts"] or m.get("subtype") ==
               "thread_broadcast"]
        top = sorted((m for m in top if oldest < _key(m["ts"]) < latest),
                     key=lambda m: _key(m["ts"]), reverse=True)
        chunk, cursor = page(top, args)
        return {"messages": chunk, "has_more": bool(cursor), "pin_count": 0,
                "channel_actions_ts": None, "channel_actions_count": 0,
                "response_metadata": {"next_cursor": cursor}}

    def _conversations_info(self, args: Json) -> Json:
        channel = self.channels.get(str(args.get("channel") or ""))
        if channel is None or (channel["is_private"] and not channel["is_member"]):
            return {"ok": False, "error": "channel_not_found"}
        return {"channel": channel}

    def _conversations_list(self, args: Json) -> Json:
        types = str(args.get("types") or "public_channel").split(",")
        shown = [c for c in self.channels.values()
                 if ("private_channel" if c["is_private"] else "public_channel") in types
                 and (not c["is_private"] or c["is_member"])]
        chunk, cursor = page(shown, args)
        return {"channels": chunk, "response_metadata": {"next_cursor": cursor}}

    def _conversations_members(self, args: Json) -> Json:
        channel = self.channels.get(str(args.get("channel") or ""))
        if channel is None or (channel["is_private"] and not channel["is_member"]):
            return {"ok": False, "error": "channel_not_found"}
        chunk, cursor = page(self.members[channel["id"]], args)
        return {"members": chunk, "response_metadata": {"next_cursor": cursor}}

    def _bots_info(self, args: Json) -> Json:
        if args.get("bot") != BOT_ID:
            return {"ok": False, "error": "bot_not_found"}
        return {"bot": {"id": BOT_ID, "deleted": False, "name": "Sift", "updated": 1449272004,
                        "app_id": APP_ID, "user_id": BOT_USER,
                        "icons": {"image_36": "https://a.slack-edge.com/bot-36.png"}}}

    def _users_lookupByEmail(self, args: Json) -> Json:
        email = str(args.get("email") or "").casefold()
        for user in self.users.values():
            if str(user["profile"].get("email") or "").casefold() == email:
                return {"user": user}
        return {"ok": False, "error": "users_not_found"}
