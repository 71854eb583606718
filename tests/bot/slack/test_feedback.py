"""Votes from reactions and feedback buttons, and the "what was missing?" comment."""

from __future__ import annotations

from typing import Any

import pytest

from rag import messages
from tests.bot.slack.conftest import (
    Q_TS,
    SlackStack,
    ask_in_channel,
)
from tests.fakes.slack_payloads import (
    BOT_USER,
    CHANNEL,
    USER,
    block_action,
    next_event_id,
    reaction,
)


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


def _prompts(stack: SlackStack) -> int:
    return sum(c.args["text"] == messages.DOWNVOTE_PROMPT
               for c in stack.slack.calls_to("chat.postEphemeral"))


async def test_a_redelivered_reaction_is_acted_on_once(stack: SlackStack) -> None:
    await ask_in_channel(stack)
    answer_ts = stack.slack.posted(CHANNEL)[0]["ts"]
    down = reaction("thumbsdown", answer_ts, event_id=next_event_id())
    assert (await stack.driver.event(down)).status == 200
    await stack.driver.settle()
    await stack.driver.click(block_action("up", message_ts=answer_ts, thread_ts=Q_TS))
    await stack.driver.settle()
    for retry in (1, 2):  # Slack retries the 👎 it thinks went unacknowledged
        assert (await stack.driver.event(down, retry_num=retry)).status == 200
    await stack.driver.settle()
    assert _prompts(stack) == 1
    vote = stack.stores.feedback.votes[(1, USER)]
    assert (vote.vote, vote.channel) == (1, "button")  # not overwritten by the redelivery


async def _button(stack: SlackStack, answer_ts: str) -> Any:
    return await stack.driver.click(block_action("down", message_ts=answer_ts, thread_ts=Q_TS))


async def _opposite(stack: SlackStack, answer_ts: str) -> Any:
    return await stack.driver.event(reaction("-1", answer_ts, event_id=next_event_id()))


@pytest.mark.parametrize(("since", "channel"), [(_button, "button"), (_opposite, "reaction")],
                         ids=["button", "opposite-reaction"])
async def test_removing_a_reaction_keeps_a_vote_it_did_not_cast(
        stack: SlackStack, since: Any, channel: str) -> None:
    await ask_in_channel(stack)
    answer_ts = stack.slack.posted(CHANNEL)[0]["ts"]
    await stack.driver.event(reaction("+1", answer_ts, event_id=next_event_id()))
    await stack.driver.settle()
    await since(stack, answer_ts)
    await stack.driver.settle()
    await stack.driver.event(reaction("+1", answer_ts, removed=True, event_id=next_event_id()))
    await stack.driver.settle()
    vote = stack.stores.feedback.votes[(1, USER)]
    assert (vote.vote, vote.channel) == (-1, channel)


async def test_a_mention_while_a_comment_is_awaited_is_answered(stack: SlackStack) -> None:
    await ask_in_channel(stack)
    answer_ts = stack.slack.posted(CHANNEL)[0]["ts"]
    await stack.driver.event(reaction("thumbsdown", answer_ts, event_id=next_event_id()))
    await stack.driver.settle()
    assert _prompts(stack) == 1
    await stack.driver.mention(f"<@{BOT_USER}> and what about production?",
                               ts="1700000600.000001", thread_ts=Q_TS)
    await stack.driver.settle()
    answers = stack.slack.calls_to("chat.postMessage")
    assert len(answers) == 2 and answers[-1].args["thread_ts"] == Q_TS
    assert stack.stores.interactions.rows[2].answer.question.text == "and what about production?"
    assert stack.stores.feedback.votes[(1, USER)].comment is None
    assert all(c.args["text"] != messages.COMMENT_THANKS
               for c in stack.slack.calls_to("chat.postEphemeral"))
