"""Everything Sift sends to (or reads back from) the Slack Web API, one method per need."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.chat.files import capped
from bot.slack.inbound import ThreadMessage, thread_messages
from bot.slack.render import Block, SlackMessage, SlackStream

log = logging.getLogger(__name__)

WORKING_REACTION = "eyes"
SLACK_FILES_HOST = "files.slack.com"
DOWNLOAD_TIMEOUT_S = 30.0
_PARAGRAPH_END = re.compile(r"(?<=\n\n)")


class StreamBroken(Exception):
    """The streamed message `ts` exists, but appending to or stopping the stream failed."""

    def __init__(self, ts: str) -> None:
        super().__init__(f"the stream of message {ts} broke off")
        self.ts = ts


class SlackOutbound:
    """Thin calls on one AsyncWebClient; link unfurling is always off."""

    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client

    async def download(self, url: str, limit: int) -> bytes:
        """A shared file's bytes (url_private_download, with the bot token and files:read),
        at most `limit` of them. Only Slack's file host, or the host of the Web API address
        Sift was given, gets the token: a file object naming any other address is refused."""
        host = urlsplit(url).hostname or ""
        if urlsplit(url).scheme not in ("https", "http") or host not in (
                SLACK_FILES_HOST, urlsplit(self._client.base_url).hostname):
            raise ValueError(f"not a Slack file address: {host!r}")
        session = self._client.session
        owned = session is None or session.closed
        if owned:
            session = aiohttp.ClientSession()
        assert session is not None
        try:
            async with session.get(url, headers={"Authorization": f"Bearer {self._client.token}"},
                                   allow_redirects=False,
                                   timeout=aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT_S)) as r:
                if r.status != 200:
                    raise ValueError(f"HTTP {r.status} from the file address")
                if r.content_type == "text/html":  # Slack's sign-in page: files:read is missing
                    raise ValueError("an HTML page came instead of the file (files:read?)")
                return await capped(r.content, r.content_length, limit)
        finally:
            if owned:
                await session.close()

    async def post(self, channel: str, thread_ts: str, message: SlackMessage) -> str:
        response = await self._client.chat_postMessage(
            channel=channel, thread_ts=thread_ts or None, text=message.text,
            blocks=list(message.blocks), unfurl_links=False, unfurl_media=False)
        return str(response["ts"])

    async def stream(self, channel: str, thread_ts: str, parts: SlackStream, *,
                     team: str, user: str) -> str:
        """chat.startStream / appendStream / stopStream; the blocks land when it stops.
        Raises StreamBroken once the message exists: a new post would then be a duplicate."""
        stream = await self._client.chat_stream(
            channel=channel, thread_ts=thread_ts, recipient_team_id=team or None,
            recipient_user_id=user or None)
        try:
            for piece in _PARAGRAPH_END.split(parts.markdown):
                if piece:
                    await stream.append(markdown_text=piece)
            await stream.stop(blocks=list(parts.blocks))
        except Exception as exc:
            if stream.ts:
                raise StreamBroken(stream.ts) from exc
            raise
        if not stream.ts:
            raise SlackApiError("chat.startStream returned no ts", response=None)
        return stream.ts

    async def start_stream(self, channel: str, thread_ts: str, *, team: str, user: str) -> str:
        """chat.startStream with no text yet: the reply that appended Markdown then fills."""
        response = await self._client.chat_startStream(
            channel=channel, thread_ts=thread_ts, recipient_team_id=team or None,
            recipient_user_id=user or None)
        if not response.get("ts"):
            raise SlackApiError("chat.startStream returned no ts", response=response)
        return str(response["ts"])

    async def append_stream(self, channel: str, ts: str, markdown: str) -> None:
        await self._client.chat_appendStream(channel=channel, ts=ts, markdown_text=markdown)

    async def stop_stream(self, channel: str, ts: str, blocks: Sequence[Block]) -> None:
        await self._client.chat_stopStream(channel=channel, ts=ts, blocks=list(blocks) or None)

    async def update(self, channel: str, ts: str, message: SlackMessage) -> None:
        await self._client.chat_update(channel=channel, ts=ts, text=message.text,
                                       blocks=list(message.blocks))

    async def ephemeral(self, channel: str, user: str, thread_ts: str,
                        message: SlackMessage) -> str:
        """A message only `user` sees; returns its message_ts (what its buttons report)."""
        response = await self._client.chat_postEphemeral(
            channel=channel, user=user, thread_ts=thread_ts or None, text=message.text,
            blocks=list(message.blocks))
        return str(response.get("message_ts") or "")

    async def react(self, channel: str, ts: str, name: str = WORKING_REACTION) -> bool:
        """True when the reaction was added (and so should be removed later)."""
        try:
            await self._client.reactions_add(channel=channel, timestamp=ts, name=name)
            return True
        except SlackApiError as exc:
            log.warning("could not add :%s: to %s/%s: %s", name, channel, ts, _error(exc))
            return False

    async def unreact(self, channel: str, ts: str, name: str = WORKING_REACTION) -> None:
        try:
            await self._client.reactions_remove(channel=channel, timestamp=ts, name=name)
        except SlackApiError as exc:
            log.warning("could not remove :%s: from %s/%s: %s", name, channel, ts, _error(exc))

    async def set_status(self, channel: str, thread_ts: str, status: str) -> bool:
        """The assistant thread's "is thinking" line; "" clears it."""
        try:
            await self._client.assistant_threads_setStatus(
                channel_id=channel, thread_ts=thread_ts, status=status)
            return True
        except SlackApiError as exc:
            log.warning("could not set the assistant status in %s: %s", channel, _error(exc))
            return False

    async def publish_home(self, user: str, view: dict[str, Any]) -> None:
        await self._client.views_publish(user_id=user, view=view)

    async def start_assistant_thread(self, channel: str, thread_ts: str, title: str,
                                     prompts: list[dict[str, str]]) -> None:
        """The assistant panel's thread: its title and the suggested prompts (a courtesy:
        failures are logged, the thread works without them)."""
        try:
            await self._client.assistant_threads_setSuggestedPrompts(
                channel_id=channel, thread_ts=thread_ts, prompts=prompts)
            await self._client.assistant_threads_setTitle(channel_id=channel,
                                                          thread_ts=thread_ts, title=title)
        except SlackApiError as exc:
            log.warning("could not set up the assistant thread in %s: %s", channel, _error(exc))

    async def thread(self, channel: str, thread_ts: str, limit: int = 100) -> list[ThreadMessage]:
        """The thread's messages, oldest first (conversations.replies)."""
        response = await self._client.conversations_replies(channel=channel, ts=thread_ts,
                                                             limit=limit)
        return thread_messages(response.get("messages") or [])

    async def permalink(self, channel: str, ts: str) -> str:
        """chat.getPermalink: the message's link ("" when Slack gives none)."""
        response = await self._client.chat_getPermalink(channel=channel, message_ts=ts)
        return str(response.get("permalink") or "")

    async def channel_info(self, channel: str) -> dict[str, Any]:
        """conversations.info's channel object."""
        response = await self._client.conversations_info(channel=channel)
        return dict(response.get("channel") or {})

    async def user_name(self, user: str) -> str:
        """users.info: the person's display name, else real name ("" when unknown)."""
        try:
            response = await self._client.users_info(user=user)
        except SlackApiError as exc:
            log.warning("no name for %s: %s", user, _error(exc))
            return ""
        found = response.get("user") or {}
        profile = found.get("profile") or {}
        return str(profile.get("display_name") or profile.get("real_name")
                   or found.get("real_name") or found.get("name") or "")

    async def user_locale(self, user: str) -> str:
        """users.info with include_locale: the person's Slack language ("de-DE"; "" if none)."""
        response = await self._client.users_info(user=user, include_locale=True)
        return str((response.get("user") or {}).get("locale") or "")

    async def thread_of(self, channel: str, ts: str) -> str:
        """The thread a message sits in ("" at top level without replies)."""
        response = await self._client.conversations_replies(channel=channel, ts=ts, limit=1)
        found = response.get("messages") or []
        return str(found[0].get("thread_ts", "")) if found else ""


def _error(exc: SlackApiError) -> str:
    response = exc.response
    return str(response.get("error", exc)) if response is not None else str(exc)
