"""Bolt listeners: parse the payload, ack, and hand it to the chat flow with a Slack surface."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from functools import partial
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext

from bot.chat.capture import BUTTON, REACTION, SHORTCUT, CaptureFlow, Pick
from bot.chat.files import Attached
from bot.chat.flow import ChatFlow
from bot.chat.message import VIA_BUTTON, VIA_REACTION, Kind, Vote
from bot.chat.tasks import Background, Busy
from bot.slack.capture import SlackSaveOffer, SlackThreadReader
from bot.slack.channel_events import ThreadChanged, changed_thread
from bot.slack.home import home_view, suggested_prompts
from bot.slack.inbound import (
    Incoming,
    Me,
    Payload,
    Picked,
    parse_accept,
    parse_ask_shortcut,
    parse_button,
    parse_command,
    parse_feedback,
    parse_mention,
    parse_message,
    parse_reaction,
    parse_shortcut,
)
from bot.slack.locale import SlackLocales
from bot.slack.outbound import SlackOutbound
from bot.slack.spec import PLATFORM as SLACK_PLATFORM
from bot.slack.surface import SlackOptions, SlackSurface
from rag import messages

log = logging.getLogger(__name__)
Ack = Callable[..., Awaitable[Any]]
Work = Coroutine[Any, Any, None]


def _me(context: AsyncBoltContext) -> Me:
    return Me(context.bot_user_id or "", context.bot_id or "")


class SlackHandlers:
    """One instance per adapter; listeners return at once, the work runs in `background`."""

    def __init__(self, flow: ChatFlow, outbound: SlackOutbound, options: SlackOptions,
                 background: Background, *, sources: Sequence[str] = (),
                 prompts: Sequence[str] = (), capture: CaptureFlow | None = None) -> None:
        self._flow = flow
        self._capture = capture
        self._out = outbound
        self._options = options
        self._background = background
        self._sources = tuple(sources)
        self._prompts = tuple(prompts)
        self._locales = SlackLocales(outbound)  # Sift's sentences in each person's language
        # Set by `sift serve` when a Slack source reads channels: the thread goes to its push.
        self.on_thread_changed: Callable[[ThreadChanged], None] | None = None

    def _surface(self, me: Me, *, channel: str, user: str, thread_ts: str) -> SlackSurface:
        return SlackSurface(self._out, self._options, me, channel=channel, user=user,
                            thread_ts=thread_ts)

    def _question(self, incoming: Incoming, me: Me) -> tuple[Work, SlackSurface]:
        surface = SlackSurface.for_message(self._out, self._options, me, incoming)
        files = tuple(Attached(f.name, f.mimetype, f.size, partial(self._out.download, f.url))
                      for f in incoming.files)
        message = incoming.to_message(me, threaded=self._options.streaming, files=files)
        return self._as(incoming.user, lambda: self._flow.on_message(message, surface)), surface

    def _as(self, user: str, work: Callable[[], Work]) -> Work:
        """`work` with Sift's sentences in `user`'s language; made only when it starts."""
        return self._locales.speaking_as(user, work)

    async def _clicked(self, ack: Ack, work: Work, surface: SlackSurface) -> None:
        """Start a command's or a click's work, then ack. Slack does not deliver those again,
        so when the process is full the person hears it at once instead.

        (An event's listener lets Busy through: bolt then answers 500, or in Socket Mode
        leaves the envelope unacknowledged, and Slack delivers the event again later.)"""
        try:
            self._background.spawn(work)
        except Busy:
            try:
                await surface.notice(messages.BUSY)
            except Exception:
                log.exception("could not say that Sift is busy")
        await ack()

    # --- questions (bolt injects arguments by name) --------------------------------------

    def _ask(self, incoming: Incoming | None, me: Me) -> None:
        """An event's question; over the limit, Busy goes up to bolt (see `_clicked`)."""
        if incoming is not None:
            self._background.spawn(self._question(incoming, me)[0])

    async def on_mention(self, body: Payload, context: AsyncBoltContext) -> None:
        self._ask(parse_mention(body, _me(context)), _me(context))

    async def on_message(self, body: Payload, context: AsyncBoltContext) -> None:
        incoming = parse_message(body, _me(context))
        self._ask(incoming, _me(context))
        if incoming is not None and incoming.kind is Kind.THREAD_REPLY and self._capture:
            offer = SlackSaveOffer(self._out, incoming.channel, incoming.thread_ts,
                                   self._locales.of)
            self._background.spawn(self._capture.on_reply(
                SLACK_PLATFORM, incoming.channel, incoming.thread_ts, incoming.ts,
                incoming.user, offer))
        if self.on_thread_changed is not None:  # a Slack source keeps its threads current
            changed = changed_thread(body, _me(context))
            if changed is not None:
                self.on_thread_changed(changed)

    async def on_ask_shortcut(self, ack: Ack, body: Payload,
                              context: AsyncBoltContext) -> None:
        """"Ask Sift about this" on a message: answered to the person alone, in its thread."""
        incoming = parse_ask_shortcut(body, _me(context))
        if incoming is None:
            await ack()
            return
        await self._clicked(ack, *self._question(incoming, _me(context)))

    async def on_command(self, ack: Ack, body: Payload, context: AsyncBoltContext) -> None:
        """/sift <question>: acknowledged at once; the answer follows, only for the asker."""
        incoming = parse_command(body)
        if incoming is None:
            await ack()
            return
        await self._clicked(ack, *self._question(incoming, _me(context)))

    # --- votes and buttons -----------------------------------------------------------------

    async def on_reaction_added(self, body: Payload, context: AsyncBoltContext) -> None:
        await self._on_reaction(body, context, added=True)
        picked = parse_accept(body, _me(context))
        if picked is not None and self._capture is not None:  # a ✅ may pick a person's reply
            self._background.spawn(self._pick(picked, REACTION, _me(context)))

    async def on_save(self, ack: Ack, body: Payload, context: AsyncBoltContext) -> None:
        """The "Save to Sift" message shortcut: that reply becomes an answer draft."""
        picked = parse_shortcut(body)
        if picked is None or self._capture is None:
            await ack()
            return
        surface = self._surface(_me(context), channel=picked.channel, user=picked.user,
                                thread_ts="")
        await self._clicked(ack, self._pick(picked, SHORTCUT, _me(context)), surface)

    async def on_save_answer(self, ack: Ack, body: Payload, context: AsyncBoltContext) -> None:
        """The asker's "Save as the answer" under a person's reply (offered after it)."""
        button = parse_button(body)
        if button is None or not button.value or self._capture is None:
            await ack()
            return
        team = str((body.get("team") or {}).get("id", ""))
        picked = Picked("", team, button.user, button.channel, button.value)
        surface = self._surface(_me(context), channel=button.channel, user=button.user,
                                thread_ts=button.thread_ts)
        await self._clicked(ack, self._pick(picked, BUTTON, _me(context)), surface)

    def _pick(self, picked: Picked, how: str, me: Me) -> Work:
        assert self._capture is not None
        capture = self._capture
        pick = Pick(SLACK_PLATFORM, picked.team, picked.channel, picked.message_ts, picked.user,
                    how, event_key=f"slack:accept:{picked.key}" if how == REACTION else "")
        surface = self._surface(me, channel=picked.channel, user=picked.user, thread_ts="")
        return self._as(picked.user, lambda: capture.on_pick(
            pick, SlackThreadReader(self._out, me), surface))

    async def on_reaction_removed(self, body: Payload, context: AsyncBoltContext) -> None:
        await self._on_reaction(body, context, added=False)

    async def _on_reaction(self, body: Payload, context: AsyncBoltContext, *, added: bool) -> None:
        reaction = parse_reaction(body, _me(context), added=added)
        if reaction is None:
            return
        vote = Vote(SLACK_PLATFORM, reaction.channel, reaction.message_ts, reaction.user,
                    reaction.vote, VIA_REACTION, added=added,
                    event_key=f"slack:{reaction.event_id}")
        surface = self._surface(_me(context), channel=reaction.channel, user=reaction.user,
                                thread_ts="")
        self._background.spawn(self._as(reaction.user, lambda: self._flow.on_vote(vote, surface)))

    async def on_feedback(self, ack: Ack, body: Payload, context: AsyncBoltContext) -> None:
        click = parse_feedback(body)
        if click is None:
            await ack()
            return
        vote = Vote(SLACK_PLATFORM, click.channel, click.message_ts, click.user, click.vote,
                    VIA_BUTTON, thread=click.thread_ts)
        surface = self._surface(_me(context), channel=click.channel, user=click.user,
                                thread_ts=click.thread_ts)
        await self._clicked(ack, self._as(click.user, lambda: self._flow.on_vote(vote, surface)),
                            surface)

    async def on_help(self, ack: Ack, body: Payload, context: AsyncBoltContext) -> None:
        """"Still need help?" under an answer: call the people the channel's policy names."""
        button = parse_button(body)
        if button is None:
            await ack()
            return
        surface = self._surface(_me(context), channel=button.channel, user=button.user,
                                thread_ts=button.thread_ts or button.message_ts)
        await self._clicked(ack, self._as(button.user, lambda: self._flow.on_help(
            SLACK_PLATFORM, button.channel, surface,
            thread=button.thread_ts or button.message_ts)), surface)

    async def on_share(self, ack: Ack, body: Payload, context: AsyncBoltContext) -> None:
        """"Share to channel" under a private answer: post it for everyone."""
        button = parse_button(body)
        if button is None or not button.value.isdigit():
            await ack()
            return
        surface = self._surface(_me(context), channel=button.channel, user=button.user,
                                thread_ts=button.thread_ts)
        await self._clicked(ack, self._as(button.user, lambda: self._flow.on_share(
            int(button.value), button.user, SLACK_PLATFORM, button.channel, surface)), surface)

    # --- App Home and the assistant panel ------------------------------------------------------

    async def on_home_opened(self, body: Payload, context: AsyncBoltContext) -> None:
        event = body.get("event") or {}
        user = event.get("user")
        if event.get("tab") != "home" or not isinstance(user, str):
            return
        self._background.spawn(self._as(user, lambda: self._publish_home(user)))

    async def _publish_home(self, user: str) -> None:
        try:
            recent = await self._flow.service.asked_by(SLACK_PLATFORM, user)
            await self._out.publish_home(user, home_view(self._sources, recent))
        except Exception:
            log.exception("could not publish the App Home of %s", user)

    async def on_assistant_thread_started(self, body: Payload) -> None:
        thread = ((body.get("event") or {}).get("assistant_thread") or {})
        channel, ts = thread.get("channel_id"), thread.get("thread_ts")
        if isinstance(channel, str) and isinstance(ts, str) and self._prompts:
            self._background.spawn(self._out.start_assistant_thread(
                channel, ts, messages.ASSISTANT_TITLE, suggested_prompts(self._prompts)))

