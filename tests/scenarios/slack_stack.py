"""Slack's side of a served Sift: the fake Web API, the signed-event driver, the database."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import select

from bot.app import App
from bot.settings import Settings
from bot.slack.http import EVENTS_PATH
from rag.embed import LocalEmbedder
from storage.models import DocumentStats
from tests.fakes.slack_driver import SlackDriver
from tests.fakes.slack_server import Call, FakeSlack
from tests.scenarios.stack import ServedSift, corpus, settings_for  # noqa: F401


class SlackSift:
    """A served Sift with Slack's side: the driver, the fake Web API, the database."""

    def __init__(self, sift: ServedSift, driver: SlackDriver, slack: FakeSlack) -> None:
        self.sift = sift
        self.driver = driver
        self.slack = slack

    async def rows(self, model: Any, count: int, **where: Any) -> list[Any]:
        """Wait until `count` rows of `model` match `where` (answers are asynchronous)."""
        return await self.sift.matching(model, count, **where)

    async def thumbs(self) -> set[tuple[int, int]]:
        """The distinct (up, down) thumbs of the documents that have any."""
        def read() -> set[tuple[int, int]]:
            with self.sift.app.database.read() as session:
                return {(d.thumbs_up, d.thumbs_down) for d in session.scalars(select(
                    DocumentStats)) if d.thumbs_up or d.thumbs_down}
        return await asyncio.to_thread(read)

    async def answer_in(self, channel: str, n: int = 1) -> Call:
        return (await self.slack.wait_for("chat.postMessage", n))[n - 1]


Serve = Callable[..., Awaitable[SlackSift]]


async def serve_on_slack(settings: Settings, embedder: LocalEmbedder,
                         slack: FakeSlack) -> SlackSift:
    """`sift serve` with `settings`, the session's model, and a driver playing Slack."""
    app = App(settings)
    app.__dict__["embedder"] = embedder  # the session's model, instead of loading another
    sift = ServedSift(app)
    await sift.start()
    # settle = stop: `sift serve` drains the Slack work it started before it returns
    driver = SlackDriver(slack, sift.base_url + EVENTS_PATH, sift.stop)
    await driver.start()
    return SlackSift(sift, driver, slack)


async def stop_all(running: list[SlackSift]) -> None:
    for served in running:
        await served.driver.stop()
        await served.sift.stop()
