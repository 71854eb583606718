"""Table tests for Slack payload parsing and the cheap "is this reply for the bot?" check."""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack.inbound import (
    FeedbackClick,
    Incoming,
    Kind,
    Me,
    Reaction,
    ThreadMessage,
    answered_by_me,
    looks_addressed,
    parse_feedback,
    parse_mention,
    parse_message,
    parse_reaction,
    plain,
    strip_mentions,
    thread_turns,
)
from rag.types import Turn
from tests.fakes.slack_payloads import (
    BOT_ID,
    BOT_USER,
    CHANNEL,
    DM,
    TEAM,
    USER,
    app_mention,
    block_action,
    direct_message,
    envelope,
    message,
    reaction,
)

ME = Me(BOT_USER, BOT_ID)


@pytest.mark.parametrize(("text", "expected"), [
    (f"<@{BOT_USER}> what is X?", "what is X?"),
    (f"hey <@{BOT_USER}|sift>   how  do I", "hey how do I"),
    ("<@U999> ask sift", "<@U999> ask sift"),
])
def test_strip_mentions(text: str, expected: str) -> None:
    assert strip_mentions(text, ME) == expected


def test_plain_turns_links_into_labels() -> None:
    assert plain("Do it <https://w.example/a|[1]> &amp; &lt;b&gt;") == "Do it [1] & <b>"


def test_mention_at_top_level_and_in_a_thread() -> None:
    top = parse_mention(app_mention(f"<@{BOT_USER}> what is X?", ts="1.1"), ME)
    assert top == Incoming(Kind.MENTION, "Ev1", TEAM, CHANNEL, USER, "what is X?", "1.1", "")
    assert top.answer_thread(threaded=False) == "1.1"
    inner = parse_mention(app_mention(f"<@{BOT_USER}> and prod?", ts="2.2", thread_ts="1.1"), ME)
    assert inner is not None and inner.thread_ts == "1.1"
    assert inner.answer_thread(threaded=False) == "1.1"


@pytest.mark.parametrize("event", [
    {"bot_id": "B888"},  # another bot mentioning us
    {"user": BOT_USER},  # ourselves
    {"channel": "D123"},  # a DM: message.im answers it
])
def test_mentions_that_are_ignored(event: dict[str, Any]) -> None:
    body = app_mention(f"<@{BOT_USER}> hi")
    body["event"].update(event)
    assert parse_mention(body, ME) is None


def test_direct_message() -> None:
    dm = parse_message(direct_message("hello there", ts="3.3"), ME)
    assert dm == Incoming(Kind.DIRECT, "Ev1", TEAM, DM, USER, "hello there", "3.3", "")
    assert dm.answer_thread(threaded=False) == ""  # answered in the DM itself
    assert dm.answer_thread(threaded=True) == "3.3"  # streams are replies


def test_thread_reply_without_mention() -> None:
    reply = parse_message(message("and for prod?", ts="5.5", thread_ts="1.1"), ME)
    assert reply is not None and reply.kind is Kind.THREAD_REPLY
    assert reply.answer_thread(threaded=False) == "1.1"


@pytest.mark.parametrize(("event", "why"), [
    ({"subtype": "bot_message", "bot_id": "B888", "user": None}, "classic bot message"),
    ({"bot_id": "B888"}, "modern bot message"),
    ({"user": BOT_USER, "bot_id": BOT_ID}, "our own message"),
    ({"subtype": "message_changed"}, "an edit"),
    ({"subtype": "channel_join"}, "a join"),
    ({"subtype": "message_deleted"}, "a deletion"),
    ({"text": f"<@{BOT_USER}> also this?"}, "a mention: app_mention answers it"),
    ({"ts": "1.1", "thread_ts": "1.1"}, "a thread parent"),
])
def test_messages_that_are_ignored(event: dict[str, Any], why: str) -> None:
    body = message("what now?", ts="5.5", thread_ts="1.1")
    body["event"].update({k: v for k, v in event.items() if v is not None})
    for k in [k for k, v in event.items() if v is None]:
        body["event"].pop(k, None)
    assert parse_message(body, ME) is None, why


def test_top_level_channel_message_is_for_auto_answer_to_decide() -> None:
    body = message("what now?", ts="5.5")
    body["event"].pop("thread_ts", None)
    parsed = parse_message(body, ME)
    assert parsed is not None and parsed.kind is Kind.CHANNEL and parsed.thread_ts == ""


def test_bot_messages_in_a_dm_are_ignored() -> None:
    body = direct_message("I am a bot")
    body["event"]["bot_id"] = "B888"
    assert parse_message(body, ME) is None


@pytest.mark.parametrize(("name", "vote"), [
    ("+1", 1), ("thumbsup", 1), ("white_check_mark", 1), ("+1::skin-tone-4", 1),
    ("-1", -1), ("thumbsdown", -1), ("eyes", 0), ("tada", 0),
])
def test_reaction_votes(name: str, vote: int) -> None:
    parsed = parse_reaction(reaction(name, "9.9"), ME, added=True)
    if vote == 0:
        assert parsed is None
    else:
        assert parsed == Reaction("Ev1", USER, CHANNEL, "9.9", vote, True)


def test_reactions_on_files_or_by_ourselves_are_ignored() -> None:
    on_file = reaction("+1", "9.9")
    on_file["event"]["item"] = {"type": "file", "file": "F1"}
    assert parse_reaction(on_file, ME, added=True) is None
    ours = reaction("+1", "9.9", user=BOT_USER)
    assert parse_reaction(ours, ME, added=False) is None


def test_feedback_click() -> None:
    click = parse_feedback(block_action("down", message_ts="7.7", thread_ts="1.1"))
    assert click == FeedbackClick(USER, CHANNEL, "7.7", "1.1", -1)
    assert parse_feedback(block_action("maybe", message_ts="7.7")) is None
    other = block_action("up", message_ts="7.7")
    other["actions"][0]["action_id"] = "something_else"
    assert parse_feedback(other) is None


@pytest.mark.parametrize(("text", "addressed"), [
    ("and for production?", True),
    ("what about staging", True),
    ("How long does that take", True),
    ("can you explain step 2", True),
    ("explain the second step", True),
    ("Please list the prerequisites", True),
    ("thanks!", False),
    ("ok", False),
    ("will do", False),
    ("great, that worked", False),
    ("I rotated them yesterday", False),
    ("<@U999> can you check this?", False),  # addressed to someone else
    ("<!here> is anyone around?", False),
    (f"<@{BOT_USER}> what now", True),
    ("", False),
    ("   ", False),
    ("?", False),
])
def test_looks_addressed(text: str, addressed: bool) -> None:
    assert looks_addressed(text, ME) is addressed


THREAD = [
    ThreadMessage("1.1", USER, "", f"<@{BOT_USER}> how do I rotate staging?"),
    ThreadMessage("1.2", BOT_USER, BOT_ID, "Run the rotation <https://w.example/a|[1]>."),
    ThreadMessage("1.3", "U777", "B777", "another bot"),
    ThreadMessage("1.4", USER, "", "and prod?"),
    ThreadMessage("1.5", USER, "", "later message"),
]


def test_thread_turns_stop_at_the_question_and_skip_other_bots() -> None:
    assert thread_turns(THREAD, "1.4", ME, 10) == (
        Turn("user", "how do I rotate staging?"), Turn("assistant", "Run the rotation [1]."))
    assert thread_turns(THREAD, "1.4", ME, 1) == (Turn("assistant", "Run the rotation [1]."),)
    assert thread_turns(THREAD, "1.4", ME, 0) == ()


def test_answered_by_me() -> None:
    assert answered_by_me(THREAD, ME)
    assert not answered_by_me([THREAD[0], THREAD[2]], ME)


def test_envelope_shape_matches_slack_docs() -> None:
    body = envelope({"type": "app_mention"}, "Ev9")
    assert body["type"] == "event_callback" and body["event_id"] == "Ev9"
    assert body["authorizations"][0]["user_id"] == BOT_USER


@pytest.mark.parametrize("parse", [
    lambda b: parse_mention(b, ME), lambda b: parse_message(b, ME),
    lambda b: parse_reaction(b, ME, added=True), parse_feedback])
@pytest.mark.parametrize("body", [
    {}, {"event": None}, {"event": {"channel": None, "user": None, "text": None}},
    {"event": {"type": "message", "user": 5, "text": ["x"], "channel_type": "im"}},
    {"actions": [None]}, {"actions": [{"action_id": "answer_feedback", "value": "up"}],
                          "container": None, "user": None},
])
def test_odd_payloads_never_raise(parse: Any, body: dict[str, Any]) -> None:
    """Listeners parse inside the request: an exception there would be a 500 and a retry."""
    parse(body)
