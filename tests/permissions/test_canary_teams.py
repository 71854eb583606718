"""The canary suite through `sift serve` on Teams: channel, group chat and personal chat,
askers in and out of hr (by their Entra object id), Activity JSON in, the fake Bot Connector
out; what reaches Teams and Claude is exactly what the rule allows."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.settings import ChannelSettings, GroupSettings
from bot.teams.app import ROUTE
from bot.teams.inbound import ASK_COMMAND
from bot.teams.spec import TeamsSettings
from rag.embed import LocalEmbedder
from storage.models import Interaction
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.teams_connector import FakeConnector
from tests.permissions.canary import QUESTION, markers_in, param_id, visible
from tests.scenarios.stack import ServedSift, settings_for
from weaviate_server.process import ManagedWeaviate

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
            channels=channels, teams=TeamsSettings(enabled=True)))
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
    if surface == "action":  # "Ask Sift about this" on someone else's channel message
        return p.save_to_sift(url, "1700000000050", "1700000000051", f"<p>{QUESTION}</p>",
                              author=p.user(3), sender=sender, command=ASK_COMMAND)
    return p.personal_message(url, QUESTION, sender=sender)


SURFACES = [
    ("channel", HR_MEMBER, (), visible()),  # a channel without an audience: public
    ("channel", OUTSIDER, ("hr",), visible("hr")),  # the channel's audience is hr
    ("group", HR_MEMBER, (), visible()),  # everyone in the group chat reads it
    ("personal", HR_MEMBER, (), visible("hr")),  # a personal chat: the asker's own groups
    ("personal", OUTSIDER, (), visible()),
    # "Ask Sift about this": the DM rule for whoever used it, whatever the channel's audience
    ("action", HR_MEMBER, (), visible("hr")),
    ("action", OUTSIDER, ("hr",), visible()),
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


# --- The attacker's requests to anonymous (local testing) Teams ---------------------------

@pytest.mark.parametrize("service_url", [
    "http://203.0.113.7:9/",  # another machine: the attacker's
    "https://attacker.example/bot/",
    "own",  # Sift's own port: its replies would be requests to Sift's own pages (/admin)
])
async def test_anonymous_teams_never_answers_to_a_foreign_service_url(
        serve: Serve, echoing_claude: FakeAnthropic, service_url: str) -> None:
    sift = await serve(())
    url = sift.base_url + "/admin/" if service_url == "own" else service_url
    status, text = await sift.post(ROUTE, json=p.personal_message(url, QUESTION,
                                                                  sender=HR_MEMBER))
    assert status == 403, text
    await asyncio.sleep(0.5)
    assert echoing_claude.requests == [] and sift.rows(Interaction) == []


@pytest.mark.parametrize("header", [
    {"X-Forwarded-For": "198.51.100.4"}, {"Forwarded": "for=198.51.100.4"},
    {"X-Forwarded-Host": "sift.example.com"}, {"Via": "1.1 proxy"},
])
async def test_anonymous_teams_refuses_what_came_through_a_proxy(
        serve: Serve, connector: FakeConnector, echoing_claude: FakeAnthropic,
        header: dict[str, str]) -> None:
    sift = await serve(())
    payload = p.personal_message(connector.service_url, QUESTION, sender=HR_MEMBER)
    status, _ = await sift.post(ROUTE, json=payload, headers=header)
    assert status == 403
    await asyncio.sleep(0.5)
    assert connector.received == [] and echoing_claude.requests == []
    # The same activity straight from this machine is answered: the refusal was the header's.
    assert (await sift.post(ROUTE, json=payload))[0] in (200, 202)
    await answered(sift)


@pytest.mark.parametrize("body", [
    [], [{"type": "message"}], {}, {"type": 7}, "text",
    {"type": "message", "serviceUrl": "file:///etc/passwd"},
    {"type": "message", "serviceUrl": "javascript:alert(1)"},
    {"type": "message", "serviceUrl": 42},
])
async def test_a_malformed_activity_is_a_400_without_a_traceback(
        serve: Serve, caplog: pytest.LogCaptureFixture, body: Any) -> None:
    sift = await serve(())
    status, text = await sift.post(ROUTE, json=body)
    assert status == 400, text
    assert "Refused:" in text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert sift.rows(Interaction) == []


async def test_a_body_that_is_not_json_is_a_400(serve: Serve,
                                               caplog: pytest.LogCaptureFixture) -> None:
    sift = await serve(())
    status, _ = await sift.post(ROUTE, data=b"\xff{not json",
                                headers={"Content-Type": "application/json"})
    assert status == 400
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
