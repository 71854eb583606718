"""Failures end in a message with a reference; content never pings; long answers split."""

from __future__ import annotations

import logging

import pytest

from bot.slack.render import SECTION_LIMIT
from rag import messages
from rag.index import IndexConfig, WeaviateIndex
from rag.logcontext import CorrelationFilter
from tests.bot.slack.conftest import (
    LOUD,
    Q_TS,
    SlackStack,
    StackFactory,
    all_text,
    ask_in_channel,
    blocks_of,
    is_error_notice,
)
from tests.fakes.anthropic_server import overloaded
from tests.fakes.slack_payloads import (
    BOT_USER,
    SIGNING_SECRET,
)
from tests.fakes.slack_server import Failure


async def test_weaviate_down_posts_a_clear_error_in_the_thread(
        make_stack: StackFactory, caplog: pytest.LogCaptureFixture) -> None:
    dead = WeaviateIndex(IndexConfig(http_url="http://127.0.0.1:9", grpc_url="127.0.0.1:9",
                                     connect_timeout_s=0.5), "all-MiniLM-L6-v2", 384)
    stack = await make_stack(index=dead)
    caplog.handler.addFilter(CorrelationFilter())
    posted = await ask_in_channel(stack)
    assert posted.args["thread_ts"] == Q_TS
    assert posted.args["text"].startswith("I can't reach the knowledge index right now.")
    reference = is_error_notice(posted.args["text"])
    assert reference and "Traceback" not in all_text(posted)
    logged = [r for r in caplog.records if getattr(r, "correlation_id", "") == reference]
    assert any("not reachable" in r.getMessage() for r in logged)


async def test_internal_error_is_reported_with_a_reference(
        stack: SlackStack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.handler.addFilter(CorrelationFilter())
    stack.slack.fail("chat.postMessage", Failure("channel_not_found"))
    notice = await ask_in_channel(stack)
    reference = is_error_notice(notice.args["text"])
    assert notice.args["text"].startswith(messages.INTERNAL_ERROR) and reference
    assert notice.args["thread_ts"] == Q_TS
    logged = [r for r in caplog.records if getattr(r, "correlation_id", "") == reference]
    assert any(r.exc_info and "channel_not_found" in str(r.exc_info[1]) for r in logged)
    assert stack.slack.calls_to("reactions.remove")  # the 👀 is removed even so


async def test_llm_unavailable_still_answers_with_a_note(stack: SlackStack) -> None:
    stack.anthropic.script.extend(overloaded("answer") for _ in range(3))
    posted = await ask_in_channel(stack)
    assert messages.LLM_DOWN_NOTE in posted.args["text"]


async def test_logs_never_show_the_tokens(stack: SlackStack,
                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    stack.slack.fail("chat.postMessage", Failure("channel_not_found"))
    await ask_in_channel(stack)
    assert "xoxb-111-222-fake" not in caplog.text and SIGNING_SECRET not in caplog.text


async def test_long_answer_is_split_into_sections(stack: SlackStack) -> None:
    paragraph = "Rotate the staging credentials with the documented vault command [1]. " * 12
    stack.anthropic.answer_rule = lambda q, n: "\n\n".join([paragraph] * 8)
    posted = await ask_in_channel(stack)
    sections = [b for b in blocks_of(posted) if b["type"] == "section"]
    assert len(sections) >= 3
    assert all(len(s["text"]["text"]) <= SECTION_LIMIT for s in sections)
    assert sum(s["text"]["text"].count("|[1]>") for s in sections) == 8 * 12


async def test_document_with_channel_mention_is_neutralised(stack: SlackStack) -> None:
    stack.anthropic.grade_rule = lambda q, d: (0.9, "Relevant.") if "closed" in d else (0.0, "No.")
    stack.anthropic.answer_rule = lambda q, n: "<!channel> the office is closed on Friday [1]."
    posted = await ask_in_channel(stack, "Is the office closed on Friday?")
    fast = await stack.driver.mention(f"<@{BOT_USER}> Is the office closed on Friday?",
                                      ts="1700000800.000001")
    assert fast
    await stack.driver.settle()
    for call in (posted, stack.slack.calls_to("chat.postMessage")[-1]):
        shown = all_text(call)
        assert "closed on Friday" in shown and not LOUD.search(shown)
        assert "&lt;!channel&gt;" in shown
