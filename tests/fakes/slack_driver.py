"""Slack's side of a test: delivers signed requests to the real /slack/events route."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bot.slack.app import SlackAdapter
from bot.slack.http import EVENTS_PATH
from bot.web import build_web_app
from tests.fakes.http import LocalServer
from tests.fakes.slack_payloads import (
    CHANNEL,
    DM,
    USER,
    action_request,
    app_mention,
    command_request,
    direct_message,
    event_request,
    message,
    next_event_id,
    sign,
)
from tests.fakes.slack_server import FakeSlack


@dataclass
class Delivery:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


class SiftWeb(LocalServer):
    """The `sift serve` web app (health + Slack route) on a free port, for adapter tests."""

    def __init__(self, adapter: SlackAdapter) -> None:
        super().__init__()
        self.app = build_web_app({})
        adapter.mount(self.app)


class SlackDriver:
    """Plays Slack: records what people write in the fake API, then delivers the signed event
    to `events_url` (the real /slack/events route). `settle` waits for the work it started."""

    def __init__(self, slack: FakeSlack, events_url: str,
                 settle: Callable[[], Awaitable[None]]) -> None:
        self.slack = slack
        self.events_url = events_url
        self._settle = settle
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        self._session = aiohttp.ClientSession()

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()

    @classmethod
    async def for_adapter(cls, slack: FakeSlack, adapter: SlackAdapter) -> tuple[SlackDriver,
                                                                                   SiftWeb]:
        web = SiftWeb(adapter)
        await web.start()
        driver = cls(slack, web.url + EVENTS_PATH, lambda: adapter.background.drain(30))
        await driver.start()
        return driver, web

    async def post(self, body: str, content_type: str, *, headers: dict[str, str] | None = None,
                   retry_num: int | None = None, timestamp: int | None = None) -> Delivery:
        assert self._session is not None
        signed = sign(body, timestamp=timestamp, retry_num=retry_num)
        all_headers = {"Content-Type": content_type, **signed, **(headers or {})}
        async with self._session.post(self.events_url, data=body.encode(),
                                      headers=all_headers) as response:
            return Delivery(response.status, await response.text(), dict(response.headers))

    async def event(self, payload: dict[str, Any], **kw: Any) -> Delivery:
        body, content_type = event_request(payload)
        return await self.post(body, content_type, **kw)

    async def click(self, payload: dict[str, Any]) -> Delivery:
        body, content_type = action_request(payload)
        return await self.post(body, content_type)

    async def command(self, fields: dict[str, str]) -> Delivery:
        body, content_type = command_request(fields)
        return await self.post(body, content_type)

    async def settle(self) -> None:
        """Wait until the work started by the deliveries so far has finished."""
        await self._settle()

    # --- people writing ------------------------------------------------------------------

    async def mention(self, text: str, *, ts: str, thread_ts: str = "",
                      user: str = USER, files: list[dict[str, Any]] | None = None) -> str:
        self.slack.add_message(CHANNEL, user, text, ts, thread_ts)
        event_id = next_event_id()
        delivery = await self.event(app_mention(text, ts=ts, thread_ts=thread_ts, user=user,
                                                event_id=event_id, files=files))
        assert delivery.status == 200, delivery
        return event_id

    async def reply(self, text: str, *, ts: str, thread_ts: str, user: str = USER) -> str:
        self.slack.add_message(CHANNEL, user, text, ts, thread_ts)
        event_id = next_event_id()
        delivery = await self.event(message(text, ts=ts, thread_ts=thread_ts, user=user,
                                            event_id=event_id))
        assert delivery.status == 200, delivery
        return event_id

    async def dm(self, text: str, *, ts: str, thread_ts: str = "",
                 files: list[dict[str, Any]] | None = None) -> str:
        self.slack.add_message(DM, USER, text, ts, thread_ts)
        event_id = next_event_id()
        delivery = await self.event(direct_message(text, ts=ts, thread_ts=thread_ts,
                                                   event_id=event_id, files=files))
        assert delivery.status == 200, delivery
        return event_id
