"""Files in Teams questions through `sift serve`: an inline screenshot (through the Bot
Connector, as the bot) and a shared file (its downloadUrl, with no token), read by OCR in
fast mode or sent to the fake Claude; a broken image gets one sentence."""

from __future__ import annotations

import json

import pytest

from bot.settings import FilesSettings
from bot.teams.app import ROUTE
from bot.teams.inbound import ASK_COMMAND
from rag import messages
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.screenshots import ERROR_LINES, broken_png, noise_png, screenshot
from tests.fakes.teams_connector import FakeConnector, Received
from tests.scenarios import test_teams
from tests.scenarios.test_files import _add_vpn_page
from tests.scenarios.test_teams import Serve

pytestmark = pytest.mark.weaviate
# Teams' served stack, as its own scenarios build it
fake_connector, make_served = test_teams.fake_connector, test_teams.make_served

ASKED = "what does this error mean?"
VPN_TITLE = "Setting up the Relay Connect VPN"


def _final(r: Received) -> bool:
    return r.stream_info is None or r.stream_info.get("streamType") == "final"


async def answer_of(connector: FakeConnector) -> Received:
    """The answer as it ends: a personal chat's stream closes with a final message."""
    await connector.wait_for(lambda c: any(_final(r) for r in c.messages))
    return next(r for r in connector.messages if _final(r))


def cited(reply: Received) -> list[str]:
    [ai] = reply.entities("https://schema.org/Message")
    return [c["appearance"]["name"] for c in ai["citation"]]


async def test_a_pasted_screenshot_in_a_personal_chat_is_read_by_ocr(make_served: Serve) -> None:
    sift = await make_served(anthropic_api_key=None)
    await _add_vpn_page(sift.app)
    url = sift.connector.service_url
    image = sift.connector.add_image(screenshot())
    assert await sift.post(p.personal_message(url, ASKED, attachments=p.inline_image(image))) == 202
    reply = await answer_of(sift.connector)
    assert "From your screenshot: `Relay Connect Handshake did not complete`" in reply.text
    assert any(name.startswith(VPN_TITLE) for name in cited(reply))
    # Fetched as the bot, through the same Bot Connector session that sent the reply.
    [(path, token)] = sift.connector.fetched
    assert path.endswith("/views/original") and token == reply.headers.get("Authorization", "")


async def test_a_shared_log_file_joins_the_question_and_gets_no_token(make_served: Serve) -> None:
    sift = await make_served(anthropic_api_key=None)
    await _add_vpn_page(sift.app)
    url = sift.connector.service_url
    log_file = sift.connector.add_download("\n".join(ERROR_LINES).encode())
    assert (
        await sift.post(
            p.personal_message(url, ASKED, attachments=p.shared_file("relay.log", log_file))
        )
        == 202
    )
    reply = await answer_of(sift.connector)
    assert any(name.startswith(VPN_TITLE) for name in cited(reply))
    assert sift.connector.fetched == [("/personal/u/_layouts/15/download.aspx", "")]


async def test_claude_gets_the_channel_screenshot(
    make_served: Serve, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.understanding = {
        "intent": "knowledge",
        "reply": "",
        "standalone_question": "What does Relay Connect's Handshake did not complete mean?",
        "search_phrases": ["Relay Connect Handshake did not complete"],
    }
    sift = await make_served()
    await _add_vpn_page(sift.app)
    png = screenshot()
    image = sift.connector.add_image(png)
    assert (
        await sift.post(
            p.channel_mention(sift.connector.service_url, ASKED, attachments=p.inline_image(image))
        )
        == 202
    )
    reply = await answer_of(sift.connector)
    assert any(name.startswith(VPN_TITLE) for name in cited(reply))
    assert ("understand", "image/png", png) in fake_anthropic.images
    assert ("answer", "image/png", png) in fake_anthropic.images


@pytest.mark.parametrize(
    ("data", "sentence"),
    [
        (broken_png(), messages.FILE_UNREADABLE.format(name="image-1")),
        # Teams declares no size: the download itself stops at the limit
        (noise_png(), messages.FILE_TOO_LARGE.format(name="image-1", limit="9 KB")),
    ],
)
async def test_a_broken_or_oversize_screenshot_gets_one_sentence_and_the_text_its_answer(
    make_served: Serve, data: bytes, sentence: str
) -> None:
    sift = await make_served(anthropic_api_key=None, files=FilesSettings(max_image_bytes=9 * 1024))
    image = sift.connector.add_image(data)
    assert (
        await sift.post(
            p.personal_message(
                sift.connector.service_url,
                "how do I set up the VPN?",
                attachments=p.inline_image(image),
            )
        )
        == 202
    )
    reply = await answer_of(sift.connector)
    assert sentence in reply.text
    assert "Setting up the VPN" in json.dumps(reply.body)


async def test_ask_sift_about_a_channel_message_answers_in_the_personal_chat(
    make_served: Serve,
) -> None:
    sift = await make_served()
    url = sift.connector.service_url
    action = p.save_to_sift(
        url,
        "1700000000060",
        "1700000000061",
        "<p>How do I set up the <b>VPN</b>?</p>",
        author=p.user(3),
        command=ASK_COMMAND,
    )
    status, dialog = await sift.sift.post(ROUTE, json=action)
    assert status == 200 and messages.ASKED_IN_PERSONAL_CHAT in dialog
    reply = await answer_of(sift.connector)
    [opened] = sift.connector.created
    assert opened["members"] == [{"id": p.user()["id"]}] and opened["isGroup"] is False
    assert reply.conversation_id == f"a:personal-{p.user()['id']}"  # not the channel
    assert any(name.startswith("Setting up the VPN") for name in cited(reply))
    assert all(
        r.conversation_id != p.CHANNEL and not r.conversation_id.startswith(f"{p.CHANNEL};")
        for r in sift.connector.received
    )
