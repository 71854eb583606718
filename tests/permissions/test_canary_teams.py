"""The canary suite through `sift serve` on Teams: channel, group chat and personal chat,
askers in and out of hr (by their Entra object id), Activity JSON in, the fake Bot Connector
out; what reaches Teams and Claude is exactly what the rule allows."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.settings import ChannelSettings, GroupSettings
from bot.teams.app import ROUTE
from bot.weaviate.process import ManagedWeaviate
from rag.embed import LocalEmbedder
from storage.models import Interaction
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.teams_connector import FakeConnector
from tests.permissions.canary import QUESTION, markers_in, param_id, visible
from tests.scenarios.stack import ServedSift, settings_for

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

HR_MEMBER, OUTSIDER = p.user(1), p.user(2)
Serve = Callable[[tuple[str, ...]], Awaitable[ServedSift]]


@pytest.fixture
async def connector() -> AsyncIterator[FakeConnector]:
    server = FakeConnector()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def serve(tmp_path: Path, weaviate_server: ManagedWeaviate, canary_collection: str,
                embedder: LocalEmbedder, echoing_claude: FakeAnthropic
                ) -> AsyncIterator[Serve]:
    running: list[ServedSift] = []

    async def make(audience: tuple[str, ...] = ()) -> ServedSift:
        channels = [ChannelSettings(platform="teams", channel=p.CHANNEL,
                                    audience=list(audience))] if audience else []
        app = App(settings_for(
            tmp_path, weaviate_server, canary_collection, echoing_claude, sources=[],
            groups=[GroupSettings(name="hr", entra_members=[HR_MEMBER["aadObjectId"]])],
            channels=channels))
        app.__dict__["embedder"] = embedder
        sift = ServedSift(app)
        await sift.start()
        running.append(sift)
        return sift

    yield make
    for sift in running:
        await sift.stop()


async def answered(sift: ServedSift, timeout_s: float = 30) -> None:
    """Wait until the answer is recorded and linked to the Teams message it went out as."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = await asyncio.to_thread(sift.rows, Interaction)
        if rows and all(r.message_ref for r in rows):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no linked answer")


def activity(surface: str, url: str, sender: dict[str, Any]) -> dict[str, Any]:
    if surface == "channel":
        return p.channel_mention(url, QUESTION, sender=sender)
    if surface == "group":
        payload = p.group_message(url, QUESTION, mentioned=p.bot())
        payload["from"] = sender
        return payload
    return p.personal_message(url, QUESTION, sender=sender)


SURFACES = [
    ("channel", HR_MEMBER, (), visible()),  # a channel without an audience: public
    ("channel", OUTSIDER, ("hr",), visible("hr")),  # the channel's audience is hr
    ("group", HR_MEMBER, (), visible()),  # everyone in the group chat reads it
    ("personal", HR_MEMBER, (), visible("hr")),  # a personal chat: the asker's own groups
    ("personal", OUTSIDER, (), visible()),
]


@pytest.mark.parametrize(("surface", "sender", "audience", "expected"), SURFACES,
                         ids=param_id)
async def test_each_teams_surface_shows_exactly_what_its_readers_may_see(
        serve: Serve, connector: FakeConnector, echoing_claude: FakeAnthropic, surface: str,
        sender: dict[str, Any], audience: tuple[str, ...], expected: set[str]) -> None:
    sift = await serve(audience)
    status, _ = await sift.post(ROUTE, json=activity(surface, connector.service_url, sender))
    assert status in (200, 202)
    await answered(sift)
    await asyncio.sleep(0.3)  # a streamed answer's last update follows its link
    assert markers_in(json.dumps([r.body for r in connector.received])) == expected
    assert markers_in(json.dumps([r.body for r in echoing_claude.requests])) == expected
