"""Streaming over HTTP: the answer appears while Claude writes it, and ends as one message."""

from __future__ import annotations

import itertools
import re

import pytest

from bot.slack.live import settled
from bot.slack.render import live_markdown
from rag import messages
from rag.logcontext import CorrelationFilter
from rag.types import AnswerStatus
from tests.bot.slack.conftest import (
    LOUD,
    Q_TS,
    QUESTION,
    SlackStack,
    StackFactory,
    all_text,
    ask_in_channel,
    blocks_of,
)
from tests.fakes.anthropic_server import Reply
from tests.fakes.slack_payloads import BOT_USER, CHANNEL, USER
from tests.fakes.slack_server import Call, Failure

SPELLED_OUT = re.compile(r"(?<![\w@])@(channel|here|everyone)\b")


async def ask(stack: SlackStack, text: str = QUESTION) -> None:
    await stack.driver.mention(f"<@{BOT_USER}> {text}", ts=Q_TS)
    await stack.driver.settle()


def appended(stack: SlackStack) -> list[str]:
    return [c.args["markdown_text"] for c in stack.slack.calls_to("chat.appendStream")]


def methods(stack: SlackStack) -> list[str]:
    """The reply's calls (not the app's identity, nor the asker's language: users.info)."""
    return [c.method for c in stack.slack.calls if c.method not in ("auth.test", "users.info")]


def text_of(call: Call) -> str:
    return str(call.args.get("markdown_text") or "") + str(call.args.get("chunks") or "")


async def test_the_answer_streams_while_claude_writes_it(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True, append_every_s=0)
    stack.anthropic.stream_delay_s = 0.05
    await ask(stack)
    [written] = stack.anthropic.calls("answer")
    [start] = stack.slack.calls_to("chat.startStream")
    appends = stack.slack.calls_to("chat.appendStream")
    assert written.body["stream"] is True
    # live: the message and its first words are on screen before Claude has finished
    assert start.at < written.finished and appends[0].at < written.finished
    assert start.args["thread_ts"] == Q_TS and start.args["recipient_user_id"] == USER
    row = stack.stores.interactions.rows[1]
    assert row.answer.status is AnswerStatus.ANSWERED and "[2]" in row.answer.text
    assert len(appends) >= 3 and "".join(appended(stack)) == row.answer.text
    [stop] = stack.slack.calls_to("chat.stopStream")
    assert not text_of(start) and not text_of(stop)  # every word went through appendStream
    blocks = blocks_of(stop)
    assert "[1] <https://wiki.example/staging-creds|" in blocks[0]["elements"][0]["text"]
    assert blocks[-1]["type"] == "context_actions"
    [message] = stack.slack.posted(CHANNEL)
    assert message["text"] == row.answer.text and message["blocks"] == blocks
    assert (row.channel, row.message_ref) == (CHANNEL, message["ts"])
    assert methods(stack)[0] == "reactions.add" and methods(stack)[-1] == "reactions.remove"
    assert "chat.postMessage" not in methods(stack) and "chat.update" not in methods(stack)


async def test_appends_wait_out_the_interval(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True, append_every_s=0.3)
    stack.anthropic.stream_delay_s = 0.03
    stack.anthropic.answer_rule = lambda q, n: " ".join(["Rotate the credentials [1]."] * 12)
    await ask(stack)
    appends = stack.slack.calls_to("chat.appendStream")
    # the last append is the flush before stopStream, which never waits
    gaps = [b.at - a.at for a, b in itertools.pairwise(appends[:-1])]
    assert gaps and min(gaps) >= 0.3
    assert len(appends) < 40  # one per word would be 48
    assert "".join(appended(stack)) == stack.stores.interactions.rows[1].answer.text
    assert not stack.slack.calls_to("chat.update")


async def test_a_model_breaking_off_mid_answer_ends_in_the_excerpts(
        make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True, append_every_s=0)
    stack.anthropic.script.append(Reply(break_after=3, kind="answer"))
    await ask(stack)
    assert "".join(appended(stack)) == "Follow the documented"
    row = stack.stores.interactions.rows[1]
    assert row.answer.extractive and row.answer.status is AnswerStatus.DEGRADED
    [message] = stack.slack.posted(CHANNEL)  # one message, no duplicate post
    [update] = stack.slack.calls_to("chat.update")
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL, message["ts"])
    assert methods(stack).index("chat.stopStream") < methods(stack).index("chat.update")
    assert messages.LLM_DOWN_NOTE in all_text(update)
    assert message["text"] == update.args["text"] and message["blocks"] == blocks_of(update)
    assert blocks_of(update)[-1]["type"] == "context_actions"
    assert not stack.slack.calls_to("chat.postMessage")
    assert row.message_ref == message["ts"]


async def test_no_answer_is_posted_once_without_a_stream(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True, append_every_s=0)
    stack.anthropic.stream_delay_s = 0.01
    stack.anthropic.answer_rule = lambda q, n: "NO_ANSWER"
    posted = await ask_in_channel(stack)
    assert stack.anthropic.calls("answer")[0].body["stream"] is True
    assert posted.args["thread_ts"] == Q_TS and messages.NO_ANSWER in posted.args["text"]
    assert len(stack.slack.calls_to("chat.postMessage")) == 1
    assert not [m for m in methods(stack) if "Stream" in m]
    assert stack.stores.interactions.rows[1].message_ref == stack.slack.posted(CHANNEL)[0]["ts"]


async def test_mentions_in_a_streamed_answer_are_neutralised(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True, append_every_s=0)
    stack.anthropic.grade_rule = lambda q, d: (0.9, "Relevant.") if "closed" in d else (0.0, "No.")
    stack.anthropic.answer_rule = lambda q, n: (
        "<!channel> the office is closed on Friday [1]. Tell @here and <@U123> <!here|here>.")
    await ask(stack, "Is the office closed on Friday?")
    pieces = appended(stack)
    assert len(pieces) >= 3
    for piece in pieces:
        assert not LOUD.search(piece) and not SPELLED_OUT.search(piece), piece
    shown = "".join(pieces)
    assert shown.startswith("<\u200b!channel> the office is closed") and "<\u200b@U123>" in shown
    assert shown == stack.slack.posted(CHANNEL)[0]["text"]
    assert not stack.slack.calls_to("chat.update")


async def test_an_answer_nobody_saw_written_is_replayed(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True, append_every_s=0)
    await ask(stack, "hi")  # a greeting: answered without the model
    assert not stack.anthropic.requests
    assert methods(stack) == ["reactions.add", "chat.startStream", "chat.stopStream",
                              "reactions.remove"]
    [message] = stack.slack.posted(CHANNEL)
    assert message["text"] == messages.GREETING_REPLY
    assert message["blocks"][-1]["type"] == "context_actions"
    assert stack.stores.interactions.rows[1].message_ref == message["ts"]


async def test_a_refused_stream_posts_the_answer_once(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True, append_every_s=0)
    stack.slack.fail("chat.startStream", Failure("not_allowed_token_type"))
    posted = await ask_in_channel(stack)
    assert posted.args["thread_ts"] == Q_TS and "[1]" in all_text(posted)
    assert len(stack.slack.calls_to("chat.startStream")) == 1  # not asked again at the end
    assert stack.stores.interactions.rows[1].message_ref == stack.slack.posted(CHANNEL)[0]["ts"]


PARAGRAPH = "Rotate the staging credentials with the documented vault command [1]. " * 5


@pytest.mark.parametrize("method", ["chat.appendStream", "chat.stopStream"])
async def test_a_stream_that_breaks_off_is_completed_in_place(make_stack: StackFactory,
                                                              method: str) -> None:
    stack = await make_stack(streaming=True, append_every_s=0)
    stack.anthropic.answer_rule = lambda q, n: "\n\n".join([PARAGRAPH] * 3)
    stack.slack.fail(method, Failure("message_not_in_streaming_state"))
    await ask(stack)
    assert stack.slack.calls_to("chat.startStream") and stack.slack.calls_to(method)
    if method == "chat.appendStream":  # the previews stop; the answer still arrives
        assert len(stack.slack.calls_to(method)) == 1
    assert not stack.slack.calls_to("chat.postMessage")
    [message] = stack.slack.posted(CHANNEL)  # one message, no duplicate
    [update] = stack.slack.calls_to("chat.update")
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL, message["ts"])
    blocks = blocks_of(update)
    assert "<https://wiki.example/staging-creds|[1]>" in blocks[0]["text"]["text"]
    assert blocks[-1]["type"] == "context_actions" and message["blocks"] == update.args["blocks"]
    assert stack.stores.interactions.rows[1].message_ref == message["ts"]


async def test_a_replayed_stream_that_breaks_off_is_completed_in_place(
        make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True)
    stack.slack.fail("chat.stopStream", Failure("message_not_in_streaming_state"))
    await ask(stack, "hi")
    [message] = stack.slack.posted(CHANNEL)
    [update] = stack.slack.calls_to("chat.update")
    assert update.args["ts"] == message["ts"] and update.args["text"] == messages.GREETING_REPLY
    assert not stack.slack.calls_to("chat.postMessage")


async def test_a_stream_that_cannot_be_completed_is_logged_with_the_reference(
        make_stack: StackFactory, caplog: pytest.LogCaptureFixture) -> None:
    stack = await make_stack(streaming=True)
    caplog.handler.addFilter(CorrelationFilter())
    stack.slack.fail("chat.stopStream", Failure("message_not_in_streaming_state"))
    stack.slack.fail("chat.update", Failure("cant_update_message"))
    await ask(stack)
    assert stack.slack.calls_to("chat.update") and not stack.slack.calls_to("chat.postMessage")
    row = stack.stores.interactions.rows[1]
    reference = row.answer.question.correlation_id
    logged = [r for r in caplog.records if getattr(r, "correlation_id", "") == reference]
    assert any(r.exc_info and "cant_update_message" in str(r.exc_info[1])
               and reference in r.getMessage() for r in logged)
    assert row.message_ref == stack.slack.posted(CHANNEL)[0]["ts"]


TRICKY = ("Ask <!channel> or @here, mail ops@example.com, see `<@U1> [2]` and "
          "<!subteam^S1|@ops> @channels @everyone! <@U2> [1].")


def test_streamed_text_only_grows_however_the_answer_is_cut() -> None:
    """What was appended cannot be taken back: each preview's Markdown extends the last."""
    final = live_markdown(TRICKY)
    sent = ""
    for end in range(1, len(TRICKY) + 1):
        shown = live_markdown(settled(TRICKY[:end].strip()))
        assert shown.startswith(sent) and final.startswith(shown), TRICKY[:end]
        assert not LOUD.search(shown) and not SPELLED_OUT.search(shown), shown
        sent = shown
    assert sent == final


@pytest.mark.parametrize(("preview", "expected"), [
    ("Rotate the key [1]", "Rotate the key [1]"),
    ("Tell @chan", "Tell "),
    ("Tell <!chan", "Tell "),
    ("Mail ops@exa", "Mail ops"),
    ("Mail ops@exa.com", "Mail ops"),
    ("a<b c@d<e", "a<b c"),
    ("@here", ""),
    ("Done @here now", "Done @here now"),
])
def test_a_last_word_that_may_become_markup_waits(preview: str, expected: str) -> None:
    assert settled(preview) == expected
