"""Slack Web API reads for the channels connector: who Sift is, channels, history, threads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from rag.errors import SyncError
from sync.connectors.slack_pace import TierPacer

# The channel is there but this source cannot read it: reported by name, the rest syncs.
UNREADABLE = {
    "not_in_channel": "Sift is not a member of it: invite the bot there (/invite @Sift)",
    "channel_not_found": "Slack has no such channel, or it is private and Sift was not "
                         "invited: check the name in `slack.channels` or invite the bot",
    "is_archived": "the channel is archived",
}
# The token itself is refused: the whole source stops with one sentence naming the setting.
REFUSED = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked",
                     "token_expired", "missing_scope", "no_permission"})
Client = AsyncWebClient  # what the connector is handed (tests: one on the fake)
PAGE = 200  # Slack recommends no more than 200 items a page


class ChannelUnreadable(SyncError):
    """One channel cannot be read (the bot is not in it, it is gone)."""


@dataclass(frozen=True)
class Me:
    """Who Sift is in this workspace (auth.test, bots.info): its messages are never indexed."""

    workspace_url: str
    user_id: str
    bot_id: str
    app_id: str


@dataclass(frozen=True)
class Channel:
    id: str
    name: str
    private: bool
    member: bool
    direct: bool = False  # a DM or a group DM: never indexed


@dataclass(frozen=True)
class Message:
    """One message as the connector needs it (history or replies)."""

    ts: str
    text: str
    user: str = ""
    bot_id: str = ""
    app_id: str = ""
    subtype: str = ""
    thread_ts: str = ""
    reply_count: int = 0
    latest_reply: str = ""
    edited_ts: str = ""
    files: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()  # attachment and block text when the message has no text


def _texts(node: Any) -> list[str]:
    """The `text` strings of a block tree (rich_text, sections), in order."""
    if isinstance(node, list):
        return [t for item in node for t in _texts(item)]
    if not isinstance(node, dict):
        return []
    own = node.get("text")
    found = [own] if isinstance(own, str) and own else []
    for key in ("elements", "fields", "text"):
        if not isinstance(node.get(key), str):
            found += _texts(node.get(key))
    return found


def message(raw: dict[str, Any]) -> Message:
    files = tuple(str(f.get("title") or f.get("name") or "") for f in raw.get("files") or ()
                  if isinstance(f, dict))
    extra: list[str] = []
    if not raw.get("text"):
        for att in raw.get("attachments") or ():
            extra += [str(att[k]) for k in ("pretext", "title", "text") if att.get(k)]
            if not any(att.get(k) for k in ("pretext", "title", "text")) and att.get(
                    "fallback"):
                extra.append(str(att["fallback"]))
        extra += _texts(raw.get("blocks") or [])
    bot = raw.get("bot_profile") or {}
    return Message(
        ts=str(raw.get("ts") or ""), text=str(raw.get("text") or ""),
        user=str(raw.get("user") or ""), bot_id=str(raw.get("bot_id") or ""),
        app_id=str(raw.get("app_id") or bot.get("app_id") or ""),
        subtype=str(raw.get("subtype") or ""), thread_ts=str(raw.get("thread_ts") or ""),
        reply_count=int(raw.get("reply_count") or 0),
        latest_reply=str(raw.get("latest_reply") or ""),
        edited_ts=str((raw.get("edited") or {}).get("ts") or ""),
        files=tuple(f for f in files if f), extra=tuple(extra))


def _channel(raw: dict[str, Any]) -> Channel:
    return Channel(str(raw.get("id") or ""), str(raw.get("name") or raw.get("id") or ""),
                   bool(raw.get("is_private") or raw.get("is_group")),
                   bool(raw.get("is_member")),
                   bool(raw.get("is_im") or raw.get("is_mpim")))


class SlackApi:
    """One run's reads through the shared AsyncWebClient (its retry handlers honour 429's
    Retry-After and retry 5xx); Slack's `error` codes become sentences naming the fault."""

    def __init__(self, client: AsyncWebClient, label: str,
                 pacer: TierPacer | None = None) -> None:
        self.client = client
        self.label = label
        self._pacer = pacer  # None: no pacing (a workspace whose limits were raised)
        self._names: dict[str, str] = {}

    async def call(self, method: str, channel: str = "", **params: Any) -> dict[str, Any]:
        if channel:
            params["channel"] = channel
        if self._pacer is not None:
            await self._pacer.wait(method)
        try:
            response = await self.client.api_call(method, http_verb="GET", params=params)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if error in REFUSED:
                raise SyncError(f"{method}: {error}", user_message=(
                    f"{self.label}: Slack refused the token ({error}): check the source's "
                    "`token`, or SIFT_SLACK_BOT_TOKEN, and the app's scopes "
                    "(channels:history, groups:history, channels:read, groups:read, "
                    "users:read)")) from exc
            if channel and error in UNREADABLE:
                raise ChannelUnreadable(f"{method} {channel}: {error}",
                                        user_message=UNREADABLE[error]) from exc
            raise SyncError(f"{method}: {error}", user_message=(
                f"{self.label}: Slack answered {method} with {error or 'an error'}")) from exc
        except Exception as exc:  # network, timeouts after the client's retries
            raise SyncError(f"{method}: {type(exc).__name__}: {exc}", user_message=(
                f"{self.label}: could not reach Slack ({type(exc).__name__})")) from exc
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def me(self) -> Me:
        auth = await self.call("auth.test")
        bot_id = str(auth.get("bot_id") or "")
        app_id = ""
        if bot_id:
            bot = (await self.call("bots.info", bot=bot_id)).get("bot") or {}
            app_id = str(bot.get("app_id") or "")
        url = str(auth.get("url") or "")
        return Me(url if url.endswith("/") else url + "/", str(auth.get("user_id") or ""),
                  bot_id, app_id)

    async def channels(self, types: str) -> list[Channel]:
        found: list[Channel] = []
        cursor = ""
        while True:
            page = await self.call("conversations.list", types=types, exclude_archived="true",
                                   limit=PAGE, **({"cursor": cursor} if cursor else {}))
            found += [_channel(c) for c in page.get("channels") or ()]
            cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor:
                return found

    async def channel(self, channel_id: str) -> Channel:
        return _channel((await self.call("conversations.info", channel_id)).get("channel")
                        or {})

    async def history(self, channel: str, oldest: str = "") -> AsyncIterator[Message]:
        """Top-level messages (thread roots carry reply_count and latest_reply), newest first."""
        async for raw in self._pages("conversations.history", channel,
                                     **({"oldest": oldest} if oldest else {})):
            yield message(raw)

    async def replies(self, channel: str, ts: str) -> list[Message]:
        """A thread, root first, every page of it."""
        return [message(raw) async for raw in self._pages("conversations.replies", channel,
                                                          ts=ts)]

    async def _pages(self, method: str, channel: str, **params: Any
                     ) -> AsyncIterator[dict[str, Any]]:
        cursor = ""
        while True:
            page = await self.call(method, channel, limit=PAGE, **params,
                                   **({"cursor": cursor} if cursor else {}))
            for raw in page.get("messages") or ():
                if isinstance(raw, dict):
                    yield raw
            cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor or not page.get("has_more", True):
                return

    async def user_name(self, user: str) -> str:
        """A person's display name (users.info, remembered for the run); the id if unknown."""
        if user not in self._names:
            try:
                found = (await self.call("users.info", user=user)).get("user") or {}
            except SyncError as exc:
                if "user_not_found" not in str(exc):
                    raise
                found = {}
            profile = found.get("profile") or {}
            self._names[user] = str(profile.get("display_name") or profile.get("real_name")
                                    or found.get("real_name") or found.get("name") or user)
        return self._names[user]
