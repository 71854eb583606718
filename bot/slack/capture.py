"""What the capture flow reads from Slack: a reply's whole thread, the channel, links, names."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from slack_sdk.errors import SlackApiError

from bot.chat.capture import DIRECT_KIND, PRIVATE_KIND, PUBLIC_KIND, Place, Post
from bot.slack.inbound import Me, plain, strip_mentions
from bot.slack.outbound import SlackOutbound
from bot.slack.render import SAVE_ANSWER_ACTION, SlackMessage, section
from rag import messages
from rag.i18n import tr

log = logging.getLogger(__name__)


def _at(ts: str) -> datetime:
    try:
        return datetime.fromtimestamp(float(ts), UTC)
    except ValueError:
        return datetime.fromtimestamp(0, UTC)


class SlackThreadReader:
    """The chat core's ThreadReader over the Web API (conversations.replies, .info,
    chat.getPermalink, users.info)."""

    def __init__(self, out: SlackOutbound, me: Me) -> None:
        self._out = out
        self._me = me

    async def posts(self, channel: str, message_ref: str) -> tuple[Post, ...]:
        root = await self._out.thread_of(channel, message_ref)
        if not root:
            return ()  # a top-level message nobody replied to
        found = await self._out.thread(channel, root, limit=200)
        return tuple(Post(m.ts, m.user, plain(strip_mentions(m.text, self._me)), _at(m.ts),
                          by_bot=bool(m.bot_id) or m.user == self._me.user_id)
                     for m in found)

    async def place(self, channel: str) -> Place:
        """A channel Slack will not describe counts as a direct message: its answer then
        stays with the asker (narrower, never wider)."""
        if channel.startswith("D"):
            return Place("a direct message", DIRECT_KIND)
        try:
            info = await self._out.channel_info(channel)
        except SlackApiError as exc:
            log.warning("conversations.info on %s failed (%s); its answer stays with the "
                        "asker", channel, exc.response.get("error") if exc.response else exc)
            return Place("a conversation", DIRECT_KIND)
        if info.get("is_im"):
            return Place("a direct message", DIRECT_KIND)
        if info.get("is_mpim"):
            return Place("a group message", PRIVATE_KIND)
        name = f"#{info.get('name') or channel}"
        return Place(name, PRIVATE_KIND if info.get("is_private") else PUBLIC_KIND)

    async def link(self, channel: str, message_ref: str) -> str:
        try:
            return await self._out.permalink(channel, message_ref)
        except SlackApiError as exc:
            log.warning("no permalink for %s/%s: %s", channel, message_ref, exc)
            return ""

    async def person(self, user: str) -> str:
        return await self._out.user_name(user)


class SlackSaveOffer:
    """The "Save as the answer" button, shown to the asker alone in the thread (ephemeral)."""

    def __init__(self, out: SlackOutbound, channel: str, thread_ts: str,
                 locale_of: Callable[[str], Awaitable[str]]) -> None:
        self._out = out
        self._channel = channel
        self._thread_ts = thread_ts
        self._locale_of = locale_of

    async def offer_save(self, asker: str, replier: str, reply_ref: str) -> None:
        language = await self._locale_of(asker)  # the asker's, not the replier's
        text = tr(messages.SAVE_OFFER, language).format(replier=f"<@{replier}>")
        button = {"type": "button", "action_id": SAVE_ANSWER_ACTION, "value": reply_ref,
                  "style": "primary",
                  "text": {"type": "plain_text", "text": tr(messages.SAVE_OFFER_LABEL,
                                                            language)}}
        blocks = (section(text), {"type": "actions", "block_id": "sift_save_offer",
                                  "elements": [button]})
        await self._out.ephemeral(self._channel, asker, self._thread_ts,
                                  SlackMessage(text, blocks))
