"""The Slack adapter end to end over HTTP: signed events in, fake Slack Web API calls out."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.render.slack import FEEDBACK_ACTION, SECTION_LIMIT
from bot.service import ChatLimits
from rag import messages
from rag.index import IndexConfig, WeaviateIndex
from rag.logcontext import CorrelationFilter
from rag.types import Platform
from tests.bot.slack.conftest import SlackStack, StackFactory
from tests.fakes.anthropic_server import overloaded
from tests.fakes.slack_payloads import (
    BOT_ID,
    BOT_USER,
    CHANNEL,
    DM,
    SIGNING_SECRET,
    USER,
    app_mention,
    block_action,
    message,
    next_event_id,
    reaction,
)
from tests.fakes.slack_server import Call, Failure

QUESTION = "How do I rotate the staging database credentials?"
Q_TS = "1700000000.000100"
LOUD = re.compile(r"<!(channel|here|everyone)|<@U|<!subteam")


def all_text(call: Call) -> str:
    """Everything a message call would show: fallback text, blocks, streamed chunks."""
    return json.dumps([call.args.get("text"), call.args.get("blocks"),
                       call.args.get("chunks"), call.args.get("markdown_text")])


def blocks_of(call: Call) -> list[dict[str, Any]]:
    blocks = call.args.get("blocks") or []
    return json.loads(blocks) if isinstance(blocks, str) else blocks


def is_error_notice(text: str) -> str | None:
    found = re.search(r"\(reference: ([0-9a-f]{8})\)", text)
    return found.group(1) if found else None


async def ask_in_channel(stack: SlackStack, text: str = QUESTION, ts: str = Q_TS) -> Call:
    await stack.driver.mention(f"<@{BOT_USER}> {text}", ts=ts)
    await stack.driver.settle()
    return stack.slack.calls_to("chat.postMessage")[-1]


async def test_mention_is_answered_in_a_thread_with_citations(stack: SlackStack) -> None:
    posted = await ask_in_channel(stack)
    assert posted.args["channel"] == CHANNEL and posted.args["thread_ts"] == Q_TS
    assert posted.args["unfurl_links"] is False and posted.args["unfurl_media"] is False
    blocks = blocks_of(posted)
    body = blocks[0]["text"]["text"]
    assert "<https://wiki.example/staging-creds|[1]>" in body
    sources = next(b for b in blocks if b["type"] == "context")["elements"][0]["text"]
    assert sources.startswith("*Sources*\n[1] <https://wiki.example/staging-creds|")
    assert blocks[-1]["type"] == "context_actions"
    assert blocks[-1]["elements"][0]["action_id"] == FEEDBACK_ACTION
    # working indicator: 👀 on the question, removed when done
    added, removed = stack.slack.calls_to("reactions.add"), stack.slack.calls_to("reactions.remove")
    assert [(c.args["timestamp"], c.args["name"]) for c in added] == [(Q_TS, "eyes")]
    assert [(c.args["timestamp"], c.args["name"]) for c in removed] == [(Q_TS, "eyes")]
    # the question as the pipeline saw it, and the link from the message to the interaction
    row = stack.stores.interactions.rows[1]
    q = row.answer.question
    assert q.text == QUESTION and q.context.platform is Platform.SLACK
    assert (q.context.channel, q.context.thread, q.context.user) == (CHANNEL, Q_TS, USER)
    assert (row.channel, row.message_ref) == (CHANNEL, stack.slack.posted(CHANNEL)[0]["ts"])
    assert posted.headers["Authorization"] == "Bearer xoxb-111-222-fake"


async def test_direct_message_is_answered_in_the_dm_and_remembered(stack: SlackStack) -> None:
    await stack.driver.dm(QUESTION, ts="1700000200.000400")
    await stack.driver.settle()
    first = stack.slack.calls_to("chat.postMessage")[-1]
    assert first.args["channel"] == DM and "thread_ts" not in first.args
    assert "[1]" in all_text(first)
    await stack.driver.dm("and for production?", ts="1700000300.000500")
    await stack.driver.settle()
    assert len(stack.slack.calls_to("chat.postMessage")) == 2
    understood = stack.anthropic.calls("understand")[-1].body["messages"][-1]["content"]
    assert QUESTION in understood and "Message: and for production?" in understood


async def test_follow_up_in_the_thread_without_a_mention(stack: SlackStack) -> None:
    await ask_in_channel(stack)
    await stack.driver.reply("thanks, that worked", ts="1700000400.000001", thread_ts=Q_TS)
    await stack.driver.settle()
    assert len(stack.slack.calls_to("chat.postMessage")) == 1  # not for the bot: ignored
    await stack.driver.reply("and what about production?", ts="1700000500.000001",
                             thread_ts=Q_TS)
    await stack.driver.settle()
    follow_up = stack.slack.calls_to("chat.postMessage")[-1]
    assert len(stack.slack.calls_to("chat.postMessage")) == 2
    assert follow_up.args["thread_ts"] == Q_TS
    understood = stack.anthropic.calls("understand")[-1].body["messages"][-1]["content"]
    assert f"user: {QUESTION}" in understood and "assistant: " in understood
    assert stack.stores.interactions.rows[2].answer.question.history[0].text == QUESTION


async def test_question_in_a_thread_the_bot_never_joined_is_ignored(stack: SlackStack) -> None:
    stack.slack.add_message(CHANNEL, "U777", "deploy today?", "1700000000.000900")
    await stack.driver.reply("what time works?", ts="1700000001.000001",
                             thread_ts="1700000000.000900")
    await stack.driver.settle()
    assert stack.slack.calls_to("conversations.replies")  # the check did look
    assert not stack.slack.calls_to("chat.postMessage")


async def test_mention_is_answered_even_without_thread_history(stack: SlackStack) -> None:
    stack.slack.fail("conversations.replies", Failure("missing_scope"))
    await stack.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts="1700000000.300000",
                               thread_ts=Q_TS)
    await stack.driver.settle()
    posted = stack.slack.calls_to("chat.postMessage")[-1]
    assert posted.args["thread_ts"] == Q_TS and "[1]" in all_text(posted)


async def test_follow_ups_without_mention_can_be_turned_off(make_stack: StackFactory) -> None:
    stack = await make_stack(follow_ups_without_mention=False)
    await ask_in_channel(stack)
    await stack.driver.reply("and what about production?", ts="1700000500.000001",
                             thread_ts=Q_TS)
    await stack.driver.settle()
    assert len(stack.slack.calls_to("chat.postMessage")) == 1


async def test_mention_inside_a_thread_uses_the_thread_as_history(stack: SlackStack) -> None:
    stack.slack.add_message(CHANNEL, "U777", "How do I rotate staging credentials?", Q_TS)
    stack.slack.add_message(CHANNEL, USER, "I think there is a vault command", "1700000000.2",
                            thread_ts=Q_TS)
    await stack.driver.mention(f"<@{BOT_USER}> which one is it?", ts="1700000000.300000",
                               thread_ts=Q_TS)
    await stack.driver.settle()
    posted = stack.slack.calls_to("chat.postMessage")[-1]
    assert posted.args["thread_ts"] == Q_TS
    history = stack.stores.interactions.rows[1].answer.question.history
    assert [t.text for t in history] == ["How do I rotate staging credentials?",
                                         "I think there is a vault command"]


async def test_reaction_added_then_removed_votes_then_retracts(stack: SlackStack) -> None:
    await ask_in_channel(stack)
    answer_ts = stack.slack.posted(CHANNEL)[0]["ts"]
    assert (await stack.driver.event(reaction("+1", answer_ts, event_id=next_event_id()))
            ).status == 200
    await stack.driver.settle()
    vote = stack.stores.feedback.votes[(1, USER)]
    assert (vote.vote, vote.channel) == (1, "reaction")
    await stack.driver.event(reaction("+1", answer_ts, removed=True, event_id=next_event_id()))
    await stack.driver.settle()
    assert (1, USER) not in stack.stores.feedback.votes
    await stack.driver.event(reaction("thumbsup", Q_TS, event_id=next_event_id()))  # question
    await stack.driver.settle()
    assert not stack.stores.feedback.votes


async def test_down_reaction_asks_why_and_stores_the_reply(stack: SlackStack) -> None:
    await ask_in_channel(stack)
    answer_ts = stack.slack.posted(CHANNEL)[0]["ts"]
    await stack.driver.event(reaction("thumbsdown", answer_ts, event_id=next_event_id()))
    await stack.driver.settle()
    prompt = stack.slack.calls_to("chat.postEphemeral")[-1]
    assert (prompt.args["user"], prompt.args["thread_ts"]) == (USER, Q_TS)
    assert prompt.args["text"] == messages.DOWNVOTE_PROMPT
    await stack.driver.reply("it did not mention production", ts="1700000600.000001",
                             thread_ts=Q_TS)
    await stack.driver.settle()
    vote = stack.stores.feedback.votes[(1, USER)]
    assert (vote.vote, vote.comment) == (-1, "it did not mention production")
    assert len(stack.slack.calls_to("chat.postMessage")) == 1  # stored, not answered
    assert stack.slack.calls_to("chat.postEphemeral")[-1].args["text"] == messages.COMMENT_THANKS


async def test_feedback_buttons_last_click_wins(stack: SlackStack) -> None:
    await ask_in_channel(stack)
    answer_ts = stack.slack.posted(CHANNEL)[0]["ts"]
    click = await stack.driver.click(block_action("up", message_ts=answer_ts, thread_ts=Q_TS))
    assert click.status == 200
    await stack.driver.settle()
    assert (stack.stores.feedback.votes[(1, USER)].vote,
            stack.stores.feedback.votes[(1, USER)].channel) == (1, "button")
    assert stack.slack.calls_to("chat.postEphemeral")[-1].args["text"] == \
        messages.FEEDBACK_THANKS
    await stack.driver.click(block_action("down", message_ts=answer_ts, thread_ts=Q_TS))
    await stack.driver.settle()
    assert stack.stores.feedback.votes[(1, USER)].vote == -1
    assert "What was missing" in stack.slack.calls_to("chat.postEphemeral")[-1].args["text"]


async def test_click_on_an_unknown_message_says_so(stack: SlackStack) -> None:
    await stack.driver.click(block_action("up", message_ts="1600000000.000001"))
    await stack.driver.settle()
    notice = stack.slack.calls_to("chat.postEphemeral")[-1]
    assert "couldn't find the answer" in notice.args["text"]


async def test_the_same_event_four_times_gives_one_answer(stack: SlackStack) -> None:
    stack.slack.add_message(CHANNEL, USER, QUESTION, Q_TS)
    payload = app_mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS, event_id=next_event_id())
    first = await stack.driver.event(payload)
    retries = await asyncio.gather(*(stack.driver.event(payload, retry_num=n) for n in (1, 2, 3)))
    assert [d.status for d in (first, *retries)] == [200] * 4
    await stack.driver.settle()
    assert len(stack.slack.calls_to("chat.postMessage")) == 1
    assert len(stack.anthropic.calls("answer")) == 1


@pytest.mark.parametrize("tamper", ["signature", "stale", "missing"])
async def test_bad_requests_get_401_and_never_reach_a_handler(stack: SlackStack,
                                                              tamper: str) -> None:
    body = json.dumps(app_mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS,
                                  event_id=next_event_id()))
    kw: dict[str, Any] = {}
    if tamper == "signature":
        kw["headers"] = {"X-Slack-Signature": "v0=" + "0" * 64}
    elif tamper == "stale":
        kw["timestamp"] = int(time.time()) - 6 * 60
    else:
        kw["headers"] = {"X-Slack-Signature": ""}
    delivery = await stack.driver.post(body, "application/json", **kw)
    await stack.driver.settle()
    assert delivery.status == 401
    assert stack.slack.calls == []  # not even auth.test: verification comes first
    assert not stack.anthropic.requests


async def test_url_verification_is_answered(stack: SlackStack) -> None:
    delivery = await stack.driver.event({"token": "x", "challenge": "c-123",
                                         "type": "url_verification"})
    assert delivery.status == 200 and json.loads(delivery.body) == {"challenge": "c-123"}


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


async def test_own_and_bot_messages_are_ignored(stack: SlackStack) -> None:
    own = message("I am Sift", ts="1700000700.000001", user=BOT_USER, channel=DM,
                  channel_type="im", event_id=next_event_id())
    own["event"]["bot_id"] = BOT_ID
    other = message("beep", ts="1700000700.000002", channel=DM, channel_type="im",
                    event_id=next_event_id())
    other["event"].update(subtype="bot_message", bot_id="B888")
    edit = message("edited", ts="1700000700.000003", channel=DM, channel_type="im",
                   event_id=next_event_id())
    edit["event"]["subtype"] = "message_changed"
    for payload in (own, other, edit):
        assert (await stack.driver.event(payload)).status == 200
    await stack.driver.settle()
    assert [c.method for c in stack.slack.calls] == ["auth.test"]


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


async def test_quota_and_size_limits_reply_privately(make_stack: StackFactory) -> None:
    stack = await make_stack(limits=ChatLimits(quota_per_minute=1, max_message_chars=100))
    await ask_in_channel(stack)
    await stack.driver.mention(f"<@{BOT_USER}> and another one?", ts="1700000900.000001")
    await stack.driver.settle()
    quota = stack.slack.calls_to("chat.postEphemeral")[-1]
    assert quota.args["user"] == USER and "wait a moment" in quota.args["text"]
    await stack.driver.dm("x" * 150, ts="1700000900.000002")
    await stack.driver.settle()
    too_long = stack.slack.calls_to("chat.postEphemeral")[-1]
    assert "too long" in too_long.args["text"] and "150 characters" in too_long.args["text"]
    assert len(stack.slack.calls_to("chat.postMessage")) == 1


async def test_streaming_posts_through_chat_stream(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True)
    await stack.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    await stack.driver.settle()
    start = stack.slack.calls_to("chat.startStream")
    stop = stack.slack.calls_to("chat.stopStream")
    assert len(start) == 1 and len(stop) == 1 and not stack.slack.calls_to("chat.postMessage")
    assert start[0].args["thread_ts"] == Q_TS and start[0].args["recipient_user_id"] == USER
    final = stack.slack.posted(CHANNEL)[0]
    assert "[[1]](https://wiki.example/staging-creds)" in final["text"]
    assert final["blocks"][-1]["type"] == "context_actions"
    assert stack.stores.interactions.rows[1].message_ref == final["ts"]


async def test_streaming_falls_back_to_one_post(make_stack: StackFactory) -> None:
    stack = await make_stack(streaming=True)
    stack.slack.fail("chat.startStream", Failure("not_allowed_token_type"))
    posted = await ask_in_channel(stack)
    assert posted.args["thread_ts"] == Q_TS and "[1]" in all_text(posted)


async def test_rate_limits_and_server_errors_are_retried(stack: SlackStack) -> None:
    stack.slack.fail("chat.postMessage", Failure("ratelimited", 429, {"Retry-After": "0"}))
    stack.slack.fail("chat.postMessage", Failure("service_unavailable", 503))
    await ask_in_channel(stack)
    assert len(stack.slack.calls_to("chat.postMessage")) == 3
    assert len(stack.slack.posted(CHANNEL)) == 1  # one answer, no error notice


async def test_assistant_threads_get_a_status_instead_of_eyes(make_stack: StackFactory) -> None:
    stack = await make_stack(assistant_status=True)
    stack.slack.add_message(DM, BOT_USER, "Hi, how can I help?", "1700001000.000001",
                            bot_id=BOT_ID)
    await stack.driver.dm(QUESTION, ts="1700001000.000002", thread_ts="1700001000.000001")
    await stack.driver.settle()
    statuses = [c.args["status"] for c in stack.slack.calls_to("assistant.threads.setStatus")]
    assert statuses == [messages.WORKING_STATUS, ""]
    assert not stack.slack.calls_to("reactions.add")
    assert stack.slack.calls_to("chat.postMessage")[-1].args["thread_ts"] == "1700001000.000001"


async def test_logs_never_show_the_tokens(stack: SlackStack,
                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    stack.slack.fail("chat.postMessage", Failure("channel_not_found"))
    await ask_in_channel(stack)
    assert "xoxb-111-222-fake" not in caplog.text and SIGNING_SECRET not in caplog.text


MANIFEST = Path(__file__).resolve().parents[3] / "deploy" / "slack-manifest.yaml"


def test_manifest_asks_for_exactly_the_scopes_and_events_needed() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert manifest["oauth_config"]["scopes"]["bot"] == [
        "app_mentions:read", "chat:write", "im:history", "channels:history", "reactions:read",
        "reactions:write"]
    settings = manifest["settings"]
    assert settings["event_subscriptions"]["bot_events"] == [
        "app_mention", "message.im", "message.channels", "reaction_added", "reaction_removed"]
    assert settings["event_subscriptions"]["request_url"].endswith("/slack/events")
    assert settings["interactivity"]["request_url"].endswith("/slack/events")


async def test_every_subscribed_event_is_acknowledged(stack: SlackStack) -> None:
    """An unhandled event gets bolt's 404, which Slack would keep retrying."""
    manifest = yaml.safe_load(MANIFEST.read_text())
    samples = {
        "app_mention": app_mention("<@UBOT> hi", event_id=next_event_id()),
        "message.im": message("hi", channel=DM, channel_type="im", event_id=next_event_id()),
        "message.channels": message("chatter", event_id=next_event_id()),
        "reaction_added": reaction("tada", "1.1", event_id=next_event_id()),
        "reaction_removed": reaction("tada", "1.1", removed=True, event_id=next_event_id()),
    }
    for name in manifest["settings"]["event_subscriptions"]["bot_events"]:
        assert (await stack.driver.event(samples[name])).status == 200, name
    await stack.driver.settle()
