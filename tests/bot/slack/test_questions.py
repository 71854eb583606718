"""Questions over HTTP: mentions, DMs, thread follow-ups, limits, and every failure told."""

from __future__ import annotations

import asyncio

from bot.chat.service import ChatLimits
from bot.slack.render import FEEDBACK_ACTION
from bot.slack.spec import PLATFORM as SLACK_PLATFORM
from rag import messages
from tests.bot.slack.conftest import (
    Q_TS,
    QUESTION,
    SlackStack,
    StackFactory,
    all_text,
    ask_in_channel,
    blocks_of,
)
from tests.fakes.slack_payloads import (
    BOT_ID,
    BOT_USER,
    CHANNEL,
    DM,
    USER,
    app_mention,
    message,
    next_event_id,
)
from tests.fakes.slack_server import Failure


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
    assert q.text == QUESTION and q.context.platform is SLACK_PLATFORM
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


async def test_the_same_event_four_times_gives_one_answer(stack: SlackStack) -> None:
    stack.slack.add_message(CHANNEL, USER, QUESTION, Q_TS)
    payload = app_mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS, event_id=next_event_id())
    first = await stack.driver.event(payload)
    retries = await asyncio.gather(*(stack.driver.event(payload, retry_num=n) for n in (1, 2, 3)))
    assert [d.status for d in (first, *retries)] == [200] * 4
    await stack.driver.settle()
    assert len(stack.slack.calls_to("chat.postMessage")) == 1
    assert len(stack.anthropic.calls("answer")) == 1


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


async def test_limit_notices_for_a_new_mention_go_to_its_thread(
        make_stack: StackFactory) -> None:
    stack = await make_stack(limits=ChatLimits(quota_per_minute=1, max_message_chars=100))
    await ask_in_channel(stack)
    await stack.driver.mention(f"<@{BOT_USER}> and another one?", ts="1700000900.000001")
    await stack.driver.mention(f"<@{BOT_USER}> {'x' * 150}", ts="1700000900.000002")
    await stack.driver.settle()
    # the two mentions are handled at once: their notices may arrive in either order
    notices = stack.slack.calls_to("chat.postEphemeral")
    [quota] = [c for c in notices if "wait a moment" in c.args["text"]]
    [too_long] = [c for c in notices if "too long" in c.args["text"]]
    assert len(notices) == 2
    # each in the thread its answer would have started, not in the channel
    assert quota.args.get("thread_ts") == "1700000900.000001"
    assert too_long.args.get("thread_ts") == "1700000900.000002"


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


async def test_the_working_reaction_does_not_hold_up_the_answer(stack: SlackStack) -> None:
    stack.slack.slow("reactions.add", 1.0)
    await ask_in_channel(stack)
    added = stack.slack.calls_to("reactions.add")
    understand = stack.anthropic.calls("understand")
    assert len(added) == 1 and understand
    # Claude was asked while Slack was still adding 👀, and the 👀 still came off at the end
    assert understand[0].started < added[0].at + 1.0
    assert [c.args["name"] for c in stack.slack.calls_to("reactions.remove")] == ["eyes"]
    assert stack.slack.calls_to("reactions.remove")[0].at > added[0].at + 1.0


async def test_a_refused_reaction_still_gets_the_answer(stack: SlackStack) -> None:
    stack.slack.fail("reactions.add", Failure("too_many_reactions"))
    posted = await ask_in_channel(stack)
    assert "[1]" in all_text(posted)
    assert not stack.slack.calls_to("reactions.remove")  # nothing went up, nothing to take off
