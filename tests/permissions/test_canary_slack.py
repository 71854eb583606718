"""The canary suite through `sift serve` over signed Slack HTTP: every surface (mention,
auto-answer, thread follow-up, DM, assistant thread, /sift and share-to-channel), askers in
and out of each group, and what reaches Slack and Claude is exactly what the rule allows."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from bot.settings import ChannelSettings, GroupSettings
from bot.slack.inbound import ASK_SHORTCUT
from bot.slack.render import SHARE_ACTION
from rag.embed import LocalEmbedder
from storage.models import Interaction, InteractionSource
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import (
    BOT_TOKEN,
    BOT_USER,
    CHANNEL,
    DM,
    SIGNING_SECRET,
    USER,
    app_mention,
    button_action,
    message,
    message_shortcut,
    next_event_id,
    slash_command,
)
from tests.fakes.slack_server import FakeSlack
from tests.permissions.canary import (
    HR,
    HR_EMAIL,
    PUB,
    QUESTION,
    markers_in,
    param_id,
    visible,
)
from tests.scenarios.slack_stack import SlackSift, serve_on_slack, stop_all
from tests.scenarios.stack import settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

HR_CHANNEL, AUTO_CHANNEL = "C0HRTEAM", "C0AUTO01"
EVE, EVE_DM = "U0EVE", "D0EVE"
AUTHOR = "U0AUTHOR1"  # wrote the message a shortcut asks about; in hr's channel, say
Serve = Callable[..., Awaitable[SlackSift]]


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    server.add_user(USER, HR_EMAIL)  # the usual asker is in hr (by email)
    server.add_user(EVE, "eve@x.example")  # in no group
    yield server
    await server.stop()


@pytest.fixture
async def serve(tmp_path: Path, weaviate_server: ManagedWeaviate, canary_collection: str,
                embedder: LocalEmbedder, echoing_claude: FakeAnthropic,
                slack: FakeSlack) -> AsyncIterator[Serve]:
    running: list[SlackSift] = []

    async def make(**extra: Any) -> SlackSift:
        settings = settings_for(
            tmp_path, weaviate_server, canary_collection, echoing_claude, sources=[],
            slack_bot_token=SecretStr(BOT_TOKEN), slack_signing_secret=SecretStr(SIGNING_SECRET),
            slack_api_url=slack.api_url,
            groups=[GroupSettings(name="hr", emails=[HR_EMAIL]),
                    GroupSettings(name="finance", domains=["finance.acme.example"])],
            channels=[ChannelSettings(platform="slack", channel=HR_CHANNEL, audience=["hr"]),
                      ChannelSettings(platform="slack", channel=AUTO_CHANNEL,
                                      respond="questions")], **extra)
        running.append(await serve_on_slack(settings, embedder, slack))
        return running[-1]

    yield make
    await stop_all(running)


def seen_by_slack(slack: FakeSlack, channel: str) -> set[str]:
    """Markers in everything Sift sent to Slack for `channel` (posts, streams, ephemerals)."""
    return markers_in(json.dumps([c.args for c in slack.calls
                                  if c.args.get("channel") == channel]))


def seen_by_claude(claude: FakeAnthropic) -> set[str]:
    return markers_in(json.dumps([r.body for r in claude.requests]))


async def ask(s: SlackSift, surface: str, user: str, channel: str) -> dict[str, Any]:
    """One question on one surface; returns the /sift ephemeral payload when there is one."""
    ts = "1700007000.000100"
    if surface == "mention":
        s.slack.add_message(channel, user, f"<@{BOT_USER}> {QUESTION}", ts)
        payload = app_mention(f"<@{BOT_USER}> {QUESTION}", ts=ts, user=user, channel=channel,
                              event_id=next_event_id())
        assert (await s.driver.event(payload)).status == 200
    elif surface in ("auto", "dm", "assistant"):
        thread = "1700006999.000100" if surface == "assistant" else ""
        s.slack.add_message(channel, user, QUESTION, ts, thread)
        payload = message(QUESTION, ts=ts, thread_ts=thread, user=user, channel=channel,
                          channel_type="im" if channel.startswith("D") else "channel",
                          event_id=next_event_id())
        assert (await s.driver.event(payload)).status == 200
    elif surface == "shortcut":  # "Ask Sift about this" on someone else's message
        s.slack.add_message(channel, AUTHOR, QUESTION, ts)
        assert (await s.driver.click(message_shortcut(
            ts, text=QUESTION, author=AUTHOR, channel=channel, user=user,
            callback_id=ASK_SHORTCUT))).status == 200
        [private] = await s.slack.wait_for("chat.postEphemeral")
        await s.rows(Interaction, 1)
        return private.args
    else:
        assert (await s.driver.command(slash_command(QUESTION, channel=channel,
                                                     user=user))).status == 200
        [private] = await s.slack.wait_for("chat.postEphemeral")
        await s.rows(Interaction, 1)
        return private.args
    await s.rows(Interaction, 1)
    return {}


SURFACES = [
    ("mention", USER, CHANNEL, visible()),  # hr's member, in a channel without an audience
    ("mention", EVE, HR_CHANNEL, visible("hr")),  # anyone, in the channel whose audience is hr
    ("auto", USER, AUTO_CHANNEL, visible()),  # an auto-answer channel: public
    ("dm", USER, DM, visible("hr")),  # a DM: the asker's own groups
    ("dm", EVE, EVE_DM, visible()),
    ("assistant", USER, DM, visible("hr")),  # the assistant panel is a DM thread
    ("command", USER, CHANNEL, visible("hr")),  # /sift: ephemeral, the asker's own groups
    ("command", EVE, CHANNEL, visible()),
    # "Ask Sift about this": the DM rule for whoever used it, whoever wrote the message
    ("shortcut", USER, CHANNEL, visible("hr")),
    ("shortcut", EVE, CHANNEL, visible()),
    ("shortcut", EVE, HR_CHANNEL, visible()),  # not the channel's audience: the user's own
]


@pytest.mark.parametrize(("surface", "user", "channel", "expected"), SURFACES,
                         ids=param_id)
async def test_each_surface_shows_exactly_what_its_readers_may_see(
        serve: Serve, echoing_claude: FakeAnthropic, surface: str, user: str, channel: str,
        expected: set[str]) -> None:
    s = await serve()
    await ask(s, surface, user, channel)
    await s.driver.settle()
    assert seen_by_slack(s.slack, channel) == expected
    assert seen_by_claude(echoing_claude) == expected


def share_offered(private: dict[str, Any]) -> bool:
    blocks = private["blocks"]
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    return any(e.get("action_id") == SHARE_ACTION for b in blocks if b["type"] == "actions"
               for e in b["elements"])


@pytest.mark.parametrize(("user", "channel", "offered"), [
    (USER, CHANNEL, False),  # cites hr documents: #general may not see them
    (EVE, CHANNEL, True),  # cites public documents only
    (USER, HR_CHANNEL, True),  # hr documents, and the channel's audience is hr
])
@pytest.mark.parametrize("surface", ["command", "shortcut"])
async def test_share_to_channel_only_when_every_cited_document_is_visible_there(
        serve: Serve, user: str, channel: str, offered: bool, surface: str) -> None:
    s = await serve()
    private = await ask(s, surface, user, channel)
    assert share_offered(private) is offered
    if not offered:
        [row] = await s.rows(Interaction, 1)
        # Even a forged click on a share button the answer never had posts nothing.
        await s.driver.click(button_action(SHARE_ACTION, str(row.id), ephemeral=True,
                                           message_ts="1.1", channel=channel, user=user))
    await s.driver.settle()
    assert [c for c in s.slack.calls_to("chat.postMessage")
            if c.args["channel"] == channel] == []


async def test_a_dm_conversation_never_feeds_a_channel_thread(
        serve: Serve, echoing_claude: FakeAnthropic) -> None:
    s = await serve()
    await ask(s, "dm", USER, DM)  # hr's answer, in the DM: it names hr's markers
    await s.slack.wait_for("chat.postMessage")
    assert seen_by_slack(s.slack, DM) == visible("hr")
    s.slack.add_message(CHANNEL, USER, f"<@{BOT_USER}> {QUESTION}", "1700008000.000100")
    await s.driver.event(app_mention(f"<@{BOT_USER}> {QUESTION}", ts="1700008000.000100",
                                     event_id=next_event_id()))
    await s.rows(Interaction, 2)
    echoing_claude.requests.clear()
    await s.driver.reply("and what was the code again?", ts="1700008002.000100",
                         thread_ts="1700008000.000100")
    await s.rows(Interaction, 3)
    await s.driver.settle()
    assert seen_by_slack(s.slack, CHANNEL) == {PUB}
    assert seen_by_claude(echoing_claude) == {PUB}  # the follow-up's history: channel only


async def test_a_share_click_forged_for_another_channel_posts_nothing_there(
        serve: Serve) -> None:
    s = await serve()
    private = await ask(s, "command", USER, HR_CHANNEL)  # hr's answer, shareable in #hr-team
    assert share_offered(private)
    [row] = await s.rows(Interaction, 1)
    await s.driver.click(button_action(SHARE_ACTION, str(row.id), ephemeral=True,
                                       message_ts="1.1", channel=CHANNEL, user=USER))
    await s.driver.settle()
    assert seen_by_slack(s.slack, CHANNEL) == set()
    assert [c for c in s.slack.calls_to("chat.postMessage")
            if c.args["channel"] == CHANNEL] == []


def cite_only_public(prompt: str) -> str:
    """An answer citing only the public excerpt, though it read the others too (and repeats
    every marker it read, as a model quoting an uncited excerpt would)."""
    excerpts = re.findall(r'<excerpt n="(\d+)"[^>]*>(.*?)</excerpt>', prompt, re.S)
    public = [n for n, body in excerpts if PUB in body]
    return "Codes: " + " ".join(sorted(markers_in(prompt))) + "".join(f" [{n}]" for n in public)


async def test_share_is_refused_when_a_restricted_excerpt_was_read_but_not_cited(
        serve: Serve, echoing_claude: FakeAnthropic) -> None:
    # hr's member asks with /sift in #general: hr's documents and the public one are both sent
    # to the model, which cites only the public one. The answer was still written from hr's.
    echoing_claude.answer_from_prompt = cite_only_public
    s = await serve()
    private = await ask(s, "command", USER, CHANNEL)
    assert HR in markers_in(json.dumps(private))  # the asker may see it, privately
    [row] = await s.rows(Interaction, 1)
    used = await s.rows(InteractionSource, 1, interaction_id=row.id)
    assert {c.title for c in used if c.citation is not None} == {f"Offsite budget code {PUB}"}
    assert f"Offsite budget code {HR}" in {c.title for c in used if c.selected}
    assert not share_offered(private)
    # The attacker's request: a click on the share button the answer never had.
    await s.driver.click(button_action(SHARE_ACTION, str(row.id), ephemeral=True,
                                       message_ts="1.1", channel=CHANNEL, user=USER))
    await s.driver.settle()
    assert [c for c in s.slack.calls_to("chat.postMessage")
            if c.args["channel"] == CHANNEL] == []


ADMIN_PW, VIEWER_PW = "the admin's own passphrase", "the viewer's own passphrase"


async def console_as(s: SlackSift, password: str) -> aiohttp.ClientSession:
    """A browser signed in to the served console (its cookies kept for a loopback address)."""
    browser = aiohttp.ClientSession(s.sift.base_url, cookie_jar=aiohttp.CookieJar(unsafe=True))
    page = await (await browser.get("/admin/login")).text()
    token = re.search(r'name="csrf" value="([^"]+)"', page)
    assert token is not None
    signed = await browser.post("/admin/login", allow_redirects=False, data={
        "csrf": token.group(1), "password": password, "next": "/admin/"})
    assert signed.status == 303, await signed.text()
    return browser


async def test_a_console_viewer_reads_no_restricted_answer_and_cannot_probe_for_one(
        serve: Serve) -> None:
    s = await serve(admin={"password": ADMIN_PW, "viewer_password": VIEWER_PW})
    await ask(s, "dm", USER, DM)  # hr's member: the answer names hr's markers
    [row] = await s.rows(Interaction, 1)
    assert HR in row.answer
    pages = ["/admin/", "/admin/questions", f"/admin/questions/{row.id}", "/admin/gaps",
             "/admin/documents?view=all", f"/admin/questions?q={HR}",
             f"/admin/questions?q={HR[:-1]}", "/admin/questions?q=CANARY"]
    viewer = await console_as(s, VIEWER_PW)
    admin = await console_as(s, ADMIN_PW)
    try:
        for path in pages:
            async with viewer.get(path) as response:
                html = await response.text()
            assert response.status == 200, path
            probe = path.partition("?q=")[2]
            if probe:  # the search box shows what the viewer typed: that is no leak
                html = html.replace(f'value="{probe}"', "")
            assert markers_in(html) <= {PUB}, path
            assert HR[len("CANARY-"):] not in html, path  # nor the marker's tail alone
        # The search gives a viewer the same page for the restricted answer's words as for
        # words nobody wrote: no yes-or-no oracle.
        probe = await (await viewer.get(f"/admin/questions?q={HR}")).text()
        assert f'href="/admin/questions/{row.id}"' not in probe
        # An admin sees it all, which shows the viewer's pages were looked at for real.
        assert HR in await (await admin.get(f"/admin/questions/{row.id}")).text()
        found = await (await admin.get(f"/admin/questions?q={HR}")).text()
        assert f'href="/admin/questions/{row.id}"' in found
    finally:
        await viewer.close()
        await admin.close()
