"""Teams activity parsing: mentions, conversations, feedback invokes, reactions (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from microsoft_agents.activity import Activity

from bot.chat.message import Kind
from bot.teams.inbound import (
    ConversationKind,
    FeedbackSubmission,
    ReactionChange,
    TeamsConversation,
    parse_feedback,
    parse_message,
    parse_reaction,
    question_text,
)
from bot.teams.spec import PLATFORM as TEAMS_PLATFORM
from tests.fakes import teams_payloads as p

URL = "https://smba.trafficmanager.net/amer/"


def activity(payload: dict[str, Any]) -> Activity:
    return Activity.model_validate(payload)


@pytest.mark.parametrize(("text", "mentions", "expected"), [
    ("<at>Sift</at> how do I reset VPN?", ["<at>Sift</at>"], "how do I reset VPN?"),
    ("how do I reset VPN, <at>Sift</at>?", ["<at>Sift</at>"], "how do I reset VPN, ?"),
    ("<at>Sift</at> ask <at>Jane Smith</at> or me", ["<at>Sift</at>"], "ask Jane Smith or me"),
    ("<at>Sift</at>", ["<at>Sift</at>"], ""),
    ("Q&amp;A&nbsp;policy?", [], "Q&A policy?"),
    ("line one\n\n  line   two ", [], "line one\n\nline two"),
])
def test_question_text(text: str, mentions: list[str], expected: str) -> None:
    assert question_text(text, mentions) == expected


def test_channel_mention() -> None:
    msg = parse_message(activity(p.channel_mention(URL, "how do I reset VPN?",
                                                   activity_id="1700000000005",
                                                   root_id="1700000000000")))
    assert msg is not None
    assert msg.text == "how do I reset VPN?"
    assert msg.conversation == TeamsConversation(
        f"{p.CHANNEL};messageid=1700000000000", ConversationKind.CHANNEL, p.TENANT)
    assert msg.conversation.base == p.CHANNEL
    assert msg.conversation.thread == "1700000000000"
    assert msg.user == p.user()["aadObjectId"]
    assert msg.dedupe_key == f"teams:{p.CHANNEL}:1700000000005"
    ctx = msg.ask_context()
    assert (ctx.platform, ctx.workspace, ctx.channel, ctx.thread) == (
        TEAMS_PLATFORM, p.TENANT, p.CHANNEL, "1700000000000")


def test_channel_post_without_mention_is_for_the_channel_policy_to_decide() -> None:
    msg = parse_message(activity(p.channel_post_without_mention(URL, "lunch?")))
    assert msg is not None and not msg.mentioned
    assert msg.to_message().kind in (Kind.CHANNEL, Kind.THREAD_REPLY)


def test_personal_message_needs_no_mention() -> None:
    msg = parse_message(activity(p.personal_message(URL, "and for macOS?")))
    assert msg is not None and msg.text == "and for macOS?"
    assert msg.conversation.kind is ConversationKind.PERSONAL
    assert msg.conversation.history_key == f"teams:{p.PERSONAL}"
    assert msg.conversation.thread == ""


def test_emulator_conversation_without_type_is_personal() -> None:
    payload = p.personal_message(URL, "hi")
    payload["channelId"] = "emulator"
    payload["conversation"] = {"id": "conv-1"}
    payload["from"] = {"id": "user-1"}
    msg = parse_message(activity(payload))
    assert msg is not None and msg.conversation.kind is ConversationKind.PERSONAL
    assert msg.user == "user-1"


@pytest.mark.parametrize(("reaction", "comment", "vote", "stored"), [
    ("dislike", "It skipped the MFA step.", -1, "It skipped the MFA step."),
    ("like", None, 1, None),
    ("like", "  ", 1, None),
])
def test_feedback(reaction: str, comment: str | None, vote: int, stored: str | None) -> None:
    conv = p.personal_conversation()
    fb = parse_feedback(activity(p.feedback_invoke(URL, conv, "1700000000100", reaction,
                                                   comment)))
    assert fb == FeedbackSubmission(
        TeamsConversation(p.PERSONAL, ConversationKind.PERSONAL, p.TENANT),
        p.user()["aadObjectId"], "1700000000100", vote, stored)


@pytest.mark.parametrize("value", [
    {"actionName": "other", "actionValue": {"reaction": "like"}},
    {"actionName": "feedback", "actionValue": {"reaction": "meh"}},
    {"actionName": "feedback"},
    None,
])
def test_feedback_ignores_other_actions(value: Any) -> None:
    payload = p.feedback_invoke(URL, p.personal_conversation(), "1", "like")
    payload["value"] = value
    assert parse_feedback(activity(payload)) is None


def test_feedback_accepts_feedback_as_object() -> None:
    payload = p.feedback_invoke(URL, p.personal_conversation(), "1", "dislike")
    payload["value"]["actionValue"]["feedback"] = {"feedbackText": "wrong"}
    fb = parse_feedback(activity(payload))
    assert fb is not None and fb.comment == "wrong"


@pytest.mark.parametrize(("added", "removed", "vote", "retract"), [
    (("like",), (), 1, False),
    ((), ("like",), 1, True),
    (("heart",), (), None, None),
    ((), ("laugh",), None, None),
])
def test_reactions(added: tuple[str, ...], removed: tuple[str, ...], vote: int | None,
                   retract: bool | None) -> None:
    conv = {"isGroup": True, "conversationType": "channel", "id": p.CHANNEL}
    change = parse_reaction(activity(p.reaction(URL, conv, "1700000000100", added=added,
                                                removed=removed)))
    if retract is None:
        assert change is None
        return
    assert change == ReactionChange(
        TeamsConversation(p.CHANNEL, ConversationKind.CHANNEL, p.TENANT),
        p.user()["aadObjectId"], "1700000000100", vote, retract)
