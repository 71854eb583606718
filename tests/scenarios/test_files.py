"""Files in questions on Slack, through `sift serve`: a screenshot read by OCR (fast mode) or
sent to the fake Claude as an image; an oversize and a broken image each get one sentence."""

from __future__ import annotations

import json

import pytest

from bot.app import App
from bot.settings import FilesSettings
from bot.slack.inbound import ASK_SHORTCUT
from bot.slack.render import SHARE_ACTION
from rag import messages
from storage.models import Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.screenshots import (
    VPN_URL,
    broken_png,
    noise_png,
    screenshot,
    vpn_troubleshooting,
)
from tests.fakes.slack_payloads import (
    BOT_TOKEN,
    BOT_USER,
    CHANNEL,
    USER,
    button_action,
    message_shortcut,
)
from tests.fakes.slack_server import Call, Failure
from tests.scenarios.slack_stack import Serve

pytestmark = pytest.mark.weaviate

Q_TS = "1700000000.000100"
ASKED = "what does this error mean?"


def shown(call: Call) -> str:
    return json.dumps([call.args.get("text"), call.args.get("blocks")])


async def _add_vpn_page(app: App) -> None:
    index = app.index()
    await index.connect()
    try:
        vpn = vpn_troubleshooting()
        await index.upsert([vpn], await app.embedder.embed_documents([f"{vpn.title}\n{vpn.text}"]))
    finally:
        await index.close()


async def test_fast_mode_reads_the_screenshot_and_cites_the_page_covering_it(
    make_served: Serve,
) -> None:
    s = await make_served(anthropic_api_key=None)
    await _add_vpn_page(s.sift.app)
    png = s.slack.add_file("error.png", screenshot(), "image/png", user=USER)
    await s.driver.mention(f"<@{BOT_USER}> {ASKED}", ts=Q_TS, files=[png])
    posted = shown(await s.answer_in(CHANNEL))
    assert "From your screenshot: `Relay Connect Handshake did not complete`" in posted
    assert VPN_URL in posted
    assert s.slack.downloads == [(png["id"], f"Bearer {BOT_TOKEN}")]
    [row] = await s.rows(Interaction, 1)
    assert row.status == "answered"  # cited, not only suggested
    # What was read is kept with the interaction; the file itself is not.
    assert row.question.startswith(ASKED) and "Handshake did not complete" in row.question


async def test_claude_sees_the_screenshot_in_understanding_and_in_the_answer(
    make_served: Serve, fake_anthropic: FakeAnthropic
) -> None:
    # The fake reads no image: it says what Claude would find in this one.
    fake_anthropic.understanding = {
        "intent": "knowledge",
        "reply": "",
        "standalone_question": "What does Relay Connect's Handshake did not complete mean?",
        "search_phrases": ["Relay Connect Handshake did not complete"],
    }
    s = await make_served()
    await _add_vpn_page(s.sift.app)
    image = screenshot()
    png = s.slack.add_file("error.png", image, "image/png", user=USER)
    await s.driver.mention(f"<@{BOT_USER}> {ASKED}", ts=Q_TS, files=[png])
    posted = shown(await s.answer_in(CHANNEL))
    assert f"<{VPN_URL}|[1]>" in posted and "From your screenshot" not in posted
    assert ("understand", "image/png", image) in fake_anthropic.images
    assert ("answer", "image/png", image) in fake_anthropic.images


@pytest.mark.parametrize(
    ("name", "data", "sentence"),
    [
        ("big.png", noise_png(), messages.FILE_TOO_LARGE.format(name="big.png", limit="9 KB")),
        ("broken.png", broken_png(), messages.FILE_UNREADABLE.format(name="broken.png")),
    ],
)
async def test_an_image_that_cannot_be_read_gets_one_sentence_and_the_text_an_answer(
    make_served: Serve, name: str, data: bytes, sentence: str
) -> None:
    s = await make_served(anthropic_api_key=None, files=FilesSettings(max_image_bytes=9 * 1024))
    png = s.slack.add_file(name, data, "image/png", user=USER)
    await s.driver.mention(
        f"<@{BOT_USER}> How do I rotate the staging database credentials?", ts=Q_TS, files=[png]
    )
    posted = shown(await s.answer_in(CHANNEL))
    assert sentence in posted
    assert "https://wiki.example/staging-creds" in posted  # the text is still answered


async def test_a_file_someone_else_shared_is_not_read(make_served: Serve) -> None:
    s = await make_served(anthropic_api_key=None)
    theirs = s.slack.add_file("error.png", screenshot(), "image/png", user="U0OTHER01")
    await s.driver.mention(
        f"<@{BOT_USER}> How do I rotate the staging database credentials?", ts=Q_TS, files=[theirs]
    )
    posted = shown(await s.answer_in(CHANNEL))
    assert "screenshot" not in posted and s.slack.downloads == []


async def test_ask_sift_about_a_message_answers_privately_in_its_thread_and_may_share(
    make_served: Serve, fake_anthropic: FakeAnthropic
) -> None:
    s = await make_served()
    root, reply = "1700000500.000100", "1700000501.000100"
    s.slack.add_message(CHANNEL, "U0AUTHOR1", "Our staging database password expired again", root)
    s.slack.add_message(
        CHANNEL,
        "U0AUTHOR2",
        "How do I rotate the staging database credentials?",
        reply,
        thread_ts=root,
    )
    await s.driver.click(
        message_shortcut(
            reply,
            text="How do I rotate the staging database credentials?",
            author="U0AUTHOR2",
            thread_ts=root,
            callback_id=ASK_SHORTCUT,
        )
    )
    [private] = await s.slack.wait_for("chat.postEphemeral")
    assert (private.args["user"], private.args["thread_ts"]) == (USER, root)
    assert "https://wiki.example/staging-creds" in shown(private)
    [understood] = fake_anthropic.calls("understand")
    assert "password expired again" in json.dumps(understood.body)  # the thread around it
    [row] = await s.rows(Interaction, 1)
    assert s.slack.calls_to("chat.postMessage") == []
    await s.driver.click(
        button_action(SHARE_ACTION, str(row.id), ephemeral=True, message_ts="1.1", thread_ts=root)
    )
    [shared] = await s.slack.wait_for("chat.postMessage")
    assert shared.args["channel"] == CHANNEL and shared.args["thread_ts"] == root
    await s.driver.settle()
    assert s.slack.calls_to("reactions.add") == []  # nothing public marked the message


async def test_a_failed_private_answer_is_reported_privately(make_served: Serve) -> None:
    s = await make_served(anthropic_api_key=None)
    s.slack.fail("chat.postEphemeral", Failure("channel_not_found"))  # the answer's post
    s.slack.add_message(
        CHANNEL,
        "U0AUTHOR2",
        "How do I rotate the staging database credentials?",
        "1700000600.000100",
    )
    await s.driver.click(
        message_shortcut(
            "1700000600.000100",
            text="How do I rotate the staging database credentials?",
            author="U0AUTHOR2",
            callback_id=ASK_SHORTCUT,
        )
    )
    _, told = await s.slack.wait_for("chat.postEphemeral", 2)
    assert told.args["user"] == USER and messages.INTERNAL_ERROR in shown(told)
    await s.driver.settle()
    assert s.slack.calls_to("chat.postMessage") == []  # nothing in the author's thread
