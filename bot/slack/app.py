"""Builds the Slack adapter: the Web API client, bolt's AsyncApp and listeners, the two modes."""

from __future__ import annotations

import asyncio
import logging
import re

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.interval_calculator import RetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient

from bot.answers.owners import KEEP_ACTION, RETIRE_ACTION
from bot.chat.tasks import Background, Busy
from bot.slack.handlers import SlackHandlers
from bot.slack.http import add_slack_routes
from bot.slack.inbound import ASK_SHORTCUT, SAVE_SHORTCUT
from bot.slack.notices import LINK_ACTION, ReviewButtons, SlackNotifier
from bot.slack.outbound import SlackOutbound
from bot.slack.render import FEEDBACK_ACTION, HELP_ACTION, SAVE_ANSWER_ACTION, SHARE_ACTION
from bot.slack.spec import SlackConfig
from bot.slack.surface import SlackOptions
from bot.surface_spec import Around
from rag.errors import ConfigError
from sync.connectors.common.slack_client import web_client

log = logging.getLogger(__name__)

COMMAND = "/sift"
SOCKET_CONNECT_TIMEOUT_S = 30.0


def bolt_app(handlers: SlackHandlers, client: AsyncWebClient, signing_secret: str) -> AsyncApp:
    """Request verification stays bolt's default (on); there is deliberately no switch."""
    # process_before_response: listeners only parse and hand over to Background, so the ack
    # still leaves at once, and the work is registered before Slack hears back.
    # bolt hands its logger's filters on to each middleware's logger, verification's included
    base = logging.getLogger("slack_bolt")
    base.addFilter(_without_request_body)
    bolt = AsyncApp(client=client, signing_secret=signing_secret,
                    process_before_response=True, logger=base)
    bolt.event("app_mention")(handlers.on_mention)
    bolt.event("message")(handlers.on_message)  # every subtype, or bolt answers 404
    bolt.event("reaction_added")(handlers.on_reaction_added)
    bolt.event("reaction_removed")(handlers.on_reaction_removed)
    bolt.action(FEEDBACK_ACTION)(handlers.on_feedback)
    bolt.action(SHARE_ACTION)(handlers.on_share)
    bolt.action(HELP_ACTION)(handlers.on_help)
    bolt.action(SAVE_ANSWER_ACTION)(handlers.on_save_answer)
    bolt.command(COMMAND)(handlers.on_command)
    bolt.shortcut(SAVE_SHORTCUT)(handlers.on_save)
    bolt.shortcut(ASK_SHORTCUT)(handlers.on_ask_shortcut)
    bolt.event("app_home_opened")(handlers.on_home_opened)
    bolt.event("assistant_thread_started")(handlers.on_assistant_thread_started)
    bolt.error(_listener_failed)
    return bolt


async def _listener_failed(error: Exception) -> None:
    """Bolt answers 500 (HTTP) or leaves the envelope unacknowledged (Socket Mode), so Slack
    delivers the event again. Busy is expected under a flood and Background counts it; the
    rest gets its traceback here."""
    if not isinstance(error, Busy):
        log.error("a Slack listener failed", exc_info=error)


def _without_request_body(record: logging.LogRecord) -> bool:
    """Bolt logs a forged request's whole body at INFO: keep the fact, drop the body."""
    if str(record.msg).startswith("Invalid request signature"):
        record.msg, record.args = "Slack: refused a request with an invalid signature", ()
    return True


class SlackAdapter:
    """The running Slack side of `sift serve`: HTTP route or Socket Mode, plus drain."""

    def __init__(self, bolt: AsyncApp, handlers: SlackHandlers, background: Background,
                 app_token: str = "", signing_secret: str = "",
                 notifier: SlackNotifier | None = None) -> None:
        self.bolt = bolt
        self.notifier = notifier  # messages Sift starts: owners' reminders, the digest
        self._signing_secret = signing_secret
        self.handlers = handlers
        self.background = background
        self._app_token = app_token
        self._socket: AsyncSocketModeHandler | None = None

    @property
    def socket_mode(self) -> bool:
        return bool(self._app_token)

    def mount(self, web_app: web.Application) -> None:
        """POST /slack/events, unless Slack comes over Socket Mode (then `start` connects)."""
        self._share_connections()
        if not self.socket_mode:
            add_slack_routes(web_app, self.bolt, self._signing_secret)

    async def start(self) -> None:
        if self.socket_mode:
            await self.start_socket_mode()

    def _share_connections(self) -> None:
        """One aiohttp session for every Web API call, bolt's per-request clients included
        (they take the session from this client). Without one, slack_sdk opens a session,
        a connection and, against slack.com, a TLS handshake for each call."""
        client = self.bolt.client
        if client.session is None or client.session.closed:
            # slack_sdk applies its timeout to the sessions it makes; this one takes it over
            client.session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=client.timeout),
                trust_env=client.trust_env_in_session)

    async def start_socket_mode(self, timeout_s: float = SOCKET_CONNECT_TIMEOUT_S) -> None:
        self._share_connections()
        self._socket = AsyncSocketModeHandler(self.bolt, app_token=self._app_token)
        try:
            # connect retries forever on a bad token; give up with a clear error instead
            await asyncio.wait_for(self._socket.connect_async(), timeout_s)
        except TimeoutError as exc:
            await self._socket.close_async()
            await self._close_connections()
            raise ConfigError(
                f"Slack Socket Mode did not connect within {timeout_s:.0f}s.",
                user_message="Slack Socket Mode could not connect: check SIFT_SLACK_APP_TOKEN "
                "(an xapp- token with connections:write).") from exc
        log.info("Slack: connected in Socket Mode")

    async def drain(self, timeout_s: float = 30.0) -> None:
        """No new envelopes; the answers in flight finish (and post with the connections)."""
        if self._socket is not None:
            await self._socket.close_async()
            self._socket = None
        await self.background.drain(timeout_s)

    async def close(self) -> None:
        await self._close_connections()

    async def _close_connections(self) -> None:
        session = self.bolt.client.session
        if session is not None:
            await session.close()


def build_slack_adapter(c: SlackConfig, around: Around, *,
                        interval: RetryIntervalCalculator | None = None,
                        append_every_s: float | None = None) -> SlackAdapter:
    """Raises ConfigError naming the missing or malformed SIFT_SLACK_* setting."""
    token, app_token = c.bot_token or "", c.app_token or ""
    if c.signing_secret is not None and not c.signing_secret.strip():
        raise ConfigError("SIFT_SLACK_SIGNING_SECRET is blank.",
                          user_message="SIFT_SLACK_SIGNING_SECRET is empty or only spaces: set "
                          "it to the app's Signing Secret (Basic Information → App "
                          "Credentials).")
    secret = (c.signing_secret or "").strip()  # a pasted secret often brings a newline along
    if not token.startswith("xoxb-"):
        raise ConfigError("SIFT_SLACK_BOT_TOKEN is not a bot token.",
                          user_message="SIFT_SLACK_BOT_TOKEN must be the bot token (xoxb-…).")
    if app_token and not app_token.startswith("xapp-"):
        raise ConfigError("SIFT_SLACK_APP_TOKEN is not an app-level token.",
                          user_message="SIFT_SLACK_APP_TOKEN must be an app-level token (xapp-…).")
    if not app_token and not secret:
        raise ConfigError("SIFT_SLACK_SIGNING_SECRET is not set.",
                          user_message="Slack over HTTP needs SIFT_SLACK_SIGNING_SECRET (Basic "
                          "Information → App Credentials), or SIFT_SLACK_APP_TOKEN for Socket "
                          "Mode.")
    s = c.options
    client = web_client(token, c.api_url, retries=s.api_retries, interval=interval)
    options = SlackOptions(streaming=s.streaming,
                           ask_why_on_downvote=s.ask_why_on_downvote,
                           assistant_status=s.assistant_status,
                           history_turns=around.history_turns,
                           markdown_block=c.markdown_block,
                           append_every_s=s.append_every_s if append_every_s is None
                           else append_every_s)
    background = Background("Slack", limit=around.max_in_flight)
    outbound = SlackOutbound(client)
    handlers = SlackHandlers(around.flow, outbound, options, background,
                             sources=list(around.sources), prompts=s.suggested_prompts,
                             capture=around.capture)
    pushed = around.pushed
    if pushed is not None:  # a Slack source: a reply, edit or deletion re-reads its thread
        handlers.on_thread_changed = lambda changed: pushed(changed.doc_id)
    bolt = bolt_app(handlers, client, secret)
    notifier = SlackNotifier(outbound)
    if around.owners is not None:
        buttons = ReviewButtons(around.owners, notifier, background)
        bolt.action(KEEP_ACTION)(buttons.on_keep)
        bolt.action(RETIRE_ACTION)(buttons.on_retire)
        bolt.action(re.compile(f"^{LINK_ACTION}_"))(buttons.on_link)
    return SlackAdapter(bolt, handlers, background, app_token, secret, notifier)
