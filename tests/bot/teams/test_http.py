"""The Teams adapter end to end over HTTP: real /api/messages, fake connector, fake Claude."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import SecretStr

from rag import messages
from rag.errors import RetrievalError
from rag.logcontext import CorrelationFilter
from tests.bot.teams.conftest import StackFactory, TeamsStack, teams_settings
from tests.fakes import teams_payloads as p
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.teams_connector import stream_type


class DownIndex(MemoryIndex):
    async def search(self, *args: Any, **kwargs: Any) -> Any:
        raise RetrievalError("Weaviate at http://127.0.0.1:1 is not reachable")


async def test_channel_mention_is_answered_in_the_thread_with_citations(
        stack: TeamsStack) -> None:
    payload = p.channel_mention(stack.service_url, "how do I set up the VPN?",
                                activity_id="1700000000101", root_id="1700000000100")
    status, _ = await stack.post(payload)
    assert status == 202
    [reply] = await stack.connector.wait_for_messages(1)
    assert reply.conversation_id == f"{p.CHANNEL};messageid=1700000000100"
    assert reply.reply_to == "1700000000101"
    assert reply.body["replyToId"] == "1700000000101"
    assert "[1]" in reply.text and "<at>" not in reply.text
    [ai] = reply.entities("https://schema.org/Message")
    assert ai["additionalType"] == ["AIGeneratedContent"]
    first = ai["citation"][0]
    assert first["position"] == 1
    assert first["appearance"]["name"] == "Setting up the VPN"
    assert first["appearance"]["url"] == "https://wiki.example/vpn"
    assert "WireGuard" in first["appearance"]["abstract"]
    assert reply.body["channelData"] == {"feedbackLoopEnabled": True}
    typing = stack.connector.of_type("typing")
    assert typing and typing[0].at <= reply.at and not typing[0].stream_info
    await stack.settle()
    [row] = stack.stores.interactions.rows.values()
    assert (row.channel, row.message_ref) == (p.CHANNEL, reply.id)
    ctx = row.answer.question.context
    assert (ctx.platform, ctx.channel, ctx.thread, ctx.workspace) == (
        "teams", p.CHANNEL, "1700000000100", p.TENANT)


async def test_channel_post_without_mention_gets_no_reply(stack: TeamsStack) -> None:
    status, _ = await stack.post(p.channel_post_without_mention(stack.service_url, "lunch?"))
    assert status == 202
    await stack.settle()
    assert stack.connector.received == []
    assert stack.anthropic.requests == []


async def test_group_chat_mention_is_answered_without_the_mention(stack: TeamsStack) -> None:
    payload = p.group_message(stack.service_url, "how do I set up the VPN?", mentioned=p.bot(),
                              activity_id="1700000000151")
    status, _ = await stack.post(payload)
    assert status == 202
    [reply] = await stack.connector.wait_for_messages(1)
    assert (reply.conversation_id, reply.reply_to) == (p.GROUP, "1700000000151")
    assert "[1]" in reply.text and reply.entities("https://schema.org/Message")
    assert not any(r.stream_info for r in stack.connector.received)  # Teams streams 1:1 only
    await stack.settle()
    [row] = stack.stores.interactions.rows.values()
    assert row.answer.question.text == "how do I set up the VPN?"
    ctx = row.answer.question.context
    assert (ctx.channel, ctx.thread, row.message_ref) == (p.GROUP, "", reply.id)


@pytest.mark.parametrize("mentioned", [None, p.user(2)], ids=["no mention", "someone else"])
async def test_group_chat_message_not_for_sift_gets_no_reply(
        stack: TeamsStack, mentioned: dict[str, Any] | None) -> None:
    payload = p.group_message(stack.service_url, "how do I set up the VPN?",
                              mentioned=mentioned)
    status, _ = await stack.post(payload)
    assert status == 202
    await stack.settle()
    assert stack.connector.received == []
    assert stack.anthropic.requests == [] and stack.stores.interactions.rows == {}


def personal(stack: TeamsStack, text: str, **kw: Any) -> dict[str, Any]:
    return p.personal_message(stack.service_url, text, **kw)


async def test_personal_chat_streams_and_follow_up_uses_history(stack: TeamsStack) -> None:
    await stack.post(personal(stack, "how do I set up the VPN?", activity_id="1700000000201"))
    [first] = await stack.connector.wait_for_messages(1)
    [update] = [r for r in stack.connector.received if stream_type("informative")(r)]
    assert update.stream_info == {"type": "streaminfo", "streamType": "informative",
                                  "streamSequence": 1}
    assert update.text and update.at <= first.at
    assert first.stream_info == {"type": "streaminfo", "streamType": "final",
                                 "streamId": update.id}
    assert first.conversation_id == p.PERSONAL and first.reply_to == "1700000000201"
    await stack.settle()
    assert stack.stores.interactions.rows[1].message_ref == update.id

    stack.anthropic.understanding = {"intent": "knowledge", "reply": "",
                                     "standalone_question": "How do I set up the VPN on macOS?",
                                     "search_phrases": ["VPN macOS"]}
    await stack.post(personal(stack, "and on macOS?", activity_id="1700000000202"))
    await stack.connector.wait_for_messages(2)
    await stack.settle()
    understand = stack.anthropic.calls("understand")[-1].body["messages"][-1]["content"]
    assert "how do I set up the VPN?" in understand
    assert first.text in understand  # the earlier answer, from the stored history
    answered = [r.answer for r in stack.stores.interactions.rows.values()]
    assert [t.text for t in answered[1].question.history] == [
        "how do I set up the VPN?", first.text]


async def test_thumbs_down_with_comment_is_stored(stack: TeamsStack) -> None:
    await stack.post(personal(stack, "how do I set up the VPN?"))
    await stack.connector.wait_for_messages(1)
    await stack.settle()
    # A streamed answer is one message in Teams: the one the informative update created.
    [streamed] = [r for r in stack.connector.received if stream_type("informative")(r)]
    status, body = await stack.post(p.feedback_invoke(
        stack.service_url, p.personal_conversation(), streamed.id, "dislike",
        "It does not say where the profile is."))
    assert (status, body) == (200, {})
    [(key, vote)] = stack.stores.feedback.votes.items()
    assert key == (1, p.user()["aadObjectId"])
    assert (vote.vote, vote.channel, vote.comment) == (
        -1, "button", "It does not say where the profile is.")
    assert len(stack.connector.messages) == 1  # Teams confirms the form itself


async def test_feedback_on_an_unknown_message_says_so(stack: TeamsStack) -> None:
    status, body = await stack.post(p.feedback_invoke(
        stack.service_url, p.personal_conversation(), "1699999999999", "like"))
    assert (status, body) == (200, {})
    [notice] = await stack.connector.wait_for_messages(1)
    assert notice.text == messages.UNKNOWN_ANSWER_FEEDBACK
    assert stack.stores.feedback.votes == {}


async def test_like_reaction_added_then_removed(stack: TeamsStack) -> None:
    await stack.post(p.channel_mention(stack.service_url, "how do I set up the VPN?"))
    [answer] = await stack.connector.wait_for_messages(1)
    await stack.settle()
    # Reactions name the channel without the thread, as in Microsoft's documented example.
    channel = {"isGroup": True, "conversationType": "channel", "id": p.CHANNEL}
    status, _ = await stack.post(p.reaction(stack.service_url, channel, answer.id,
                                            added=("like",)))
    assert status == 202
    [(key, vote)] = stack.stores.feedback.votes.items()
    assert (key, vote.vote, vote.channel) == ((1, p.user()["aadObjectId"]), 1, "reaction")
    await stack.post(p.reaction(stack.service_url, channel, answer.id, removed=("like",)))
    assert stack.stores.feedback.votes == {}
    await stack.post(p.reaction(stack.service_url, channel, "1699999999999", added=("like",)))
    assert stack.stores.feedback.votes == {}
    assert len(stack.connector.messages) == 1


async def test_removing_a_like_keeps_a_feedback_button_vote(stack: TeamsStack) -> None:
    await stack.post(p.channel_mention(stack.service_url, "how do I set up the VPN?"))
    [answer] = await stack.connector.wait_for_messages(1)
    await stack.settle()
    channel = {"isGroup": True, "conversationType": "channel", "id": p.CHANNEL}
    await stack.post(p.reaction(stack.service_url, channel, answer.id, added=("like",)))
    status, _ = await stack.post(p.feedback_invoke(stack.service_url, channel, answer.id,
                                                   "dislike", "It missed the VPN profile."))
    assert status == 200
    await stack.post(p.reaction(stack.service_url, channel, answer.id, removed=("like",)))
    [vote] = stack.stores.feedback.votes.values()
    assert (vote.vote, vote.channel) == (-1, "button")


async def test_a_duplicate_activity_is_answered_once(stack: TeamsStack) -> None:
    payload = personal(stack, "how do I set up the VPN?", activity_id="1700000000301")
    assert (await stack.post(payload))[0] == 202
    assert (await stack.post(payload))[0] == 202
    await stack.connector.wait_for_messages(1)
    await stack.settle()
    assert len(stack.connector.messages) == 1
    assert len(stack.stores.interactions.rows) == 1


async def test_a_duplicate_delivered_concurrently_is_answered_once(stack: TeamsStack) -> None:
    # Teams redelivers when the first delivery is slow, so copies can arrive while the first
    # is still being admitted.
    payload = personal(stack, "how do I set up the VPN?", activity_id="1700000000302")
    statuses = await asyncio.gather(*(stack.post(payload) for _ in range(3)))
    assert [status for status, _ in statuses] == [202, 202, 202]
    await stack.connector.wait_for_messages(1)
    await stack.settle()
    assert len(stack.connector.messages) == 1
    assert len([r for r in stack.connector.received if stream_type("informative")(r)]) == 1
    assert len(stack.stores.interactions.rows) == 1


async def test_weaviate_down_gives_a_clear_message_with_a_reference(
        make_stack: StackFactory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.handler.addFilter(CorrelationFilter())
    stack = await make_stack(index=DownIndex())
    await stack.post(p.channel_mention(stack.service_url, "how do I set up the VPN?"))
    [reply] = await stack.connector.wait_for_messages(1)
    [row] = stack.stores.interactions.rows.values()
    cid = row.answer.question.correlation_id
    assert reply.text == messages.with_reference(RetrievalError.user_message, cid)
    assert "entities" not in reply.body and "channelData" not in reply.body
    assert any("not reachable" in r.getMessage() and getattr(r, "correlation_id", "") == cid
               for r in caplog.records)


async def test_credentials_configured_and_no_token_is_401(make_stack: StackFactory) -> None:
    settings = teams_settings().model_copy(update={
        "teams_app_id": p.BOT_APP_ID, "teams_app_password": SecretStr("not-a-real-secret"),
        "teams_tenant_id": p.TENANT})
    stack = await make_stack(settings=settings)
    payload = p.channel_mention(stack.service_url, "how do I set up the VPN?")
    status, body = await stack.post(payload)
    assert status == 401 and "error" in body
    status, _ = await stack.post(payload, headers={"Authorization": "Bearer abc.def.ghi"})
    assert status == 401
    await stack.settle()
    assert stack.connector.received == [] and stack.connector.refused == []
    assert stack.stores.interactions.rows == {} and stack.anthropic.requests == []
