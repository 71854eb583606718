"""Slack's side of the messages Sift starts (bot/chat/notify.py): a direct message to a person
(chat.postMessage to a user id opens the app's DM) or a post in a channel, with buttons."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.answers.owners import Outcome, Owners
from bot.chat.notify import Notice
from bot.chat.tasks import Background
from bot.slack.inbound import ButtonClick, Payload, parse_button
from bot.slack.mrkdwn import safe_url, to_mrkdwn
from bot.slack.outbound import SlackOutbound
from bot.slack.render import SlackMessage, fallback_text, section
from bot.slack.spec import PLATFORM

Ack = Callable[..., Awaitable[Any]]

log = logging.getLogger(__name__)

LINK_ACTION = "sift_notice_link"  # a link button still reports its click: acknowledged only
NOTICE_ACTIONS = "sift_notice_actions"


def render(notice: Notice) -> SlackMessage:
    body = to_mrkdwn(notice.text, {})
    buttons: list[dict[str, Any]] = []
    for i, choice in enumerate(notice.choices):
        button: dict[str, Any] = {"type": "button",
                                  "text": {"type": "plain_text", "text": choice.label}}
        url = safe_url(choice.url) if choice.url else None
        if url is not None:
            button.update(url=url, action_id=f"{LINK_ACTION}_{i}")
        elif choice.action:
            button.update(action_id=choice.action, value=choice.value)
        else:
            continue
        buttons.append(button)
    blocks = [section(body)]
    if buttons:
        blocks.append({"type": "actions", "block_id": NOTICE_ACTIONS, "elements": buttons})
    return SlackMessage(fallback_text(body), tuple(blocks))


class SlackNotifier:
    def __init__(self, outbound: SlackOutbound) -> None:
        self._out = outbound

    async def notify(self, to: str, notice: Notice) -> bool:
        try:
            await self._out.post(to, "", render(notice))
        except SlackApiError as exc:
            log.warning("Slack refused a message to %s: %s", to, exc.response.get("error"))
            return False
        return True

    async def settle(self, channel: str, ts: str, sentence: str) -> None:
        """A clicked notice: its buttons give way to what the click did."""
        body = to_mrkdwn(sentence, {})
        await self._out.update(channel, ts, SlackMessage(fallback_text(body), (section(body),)))


class ReviewButtons:
    """An owner's keep / retire under a reminder (bot/answers/owners.py): acknowledged at once,
    done in the background, the message then says what was done."""

    def __init__(self, owners: Owners, notifier: SlackNotifier, background: Background) -> None:
        self._owners = owners
        self._notifier = notifier
        self._background = background

    async def on_keep(self, ack: Ack, body: Payload) -> None:
        await self._clicked(ack, body, self._owners.keep)

    async def on_retire(self, ack: Ack, body: Payload) -> None:
        await self._clicked(ack, body, self._owners.retire)

    async def on_link(self, ack: Ack) -> None:
        await ack()  # the browser opened the page; Slack only wants to hear the click arrived

    async def _clicked(self, ack: Ack, body: Payload,
                       act: Callable[[str, str, str], Awaitable[Outcome]]) -> None:
        await ack()
        click = parse_button(body)
        if click is not None:
            self._background.spawn(self._settle(click, act))

    async def _settle(self, click: ButtonClick,
                      act: Callable[[str, str, str], Awaitable[Outcome]]) -> None:
        try:
            outcome = await act(PLATFORM, click.user, click.value)
            await self._notifier.settle(click.channel, click.message_ts, outcome.sentence)
        except Exception:
            log.exception("a review button of %s failed", click.user)
