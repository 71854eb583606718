"""Personal-chat answers streamed while Claude writes them (Teams' streaming protocol)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from bot.teams.render import no_pings, no_pings_so_far
from rag import messages
from rag.preview import preview_text
from tests.bot.teams.conftest import StackFactory, TeamsStack
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import Reply
from tests.fakes.teams_connector import FakeConnector, Received, stream_type

QUESTION = "how do I set up the VPN?"
AI = "https://schema.org/Message"


def personal(stack: TeamsStack, **kw: Any) -> dict[str, Any]:
    return p.personal_message(stack.service_url, QUESTION, **kw)


def updates(connector: FakeConnector, kind: str) -> list[Received]:
    return [r for r in connector.received if stream_type(kind)(r)]


async def streamed_answer(stack: TeamsStack) -> tuple[Received, list[Received], Received]:
    """The informative update, the streaming updates and the final message of one answer."""
    await stack.post(personal(stack))
    [final] = await stack.connector.wait_for_messages(1)
    await stack.settle()
    [informative] = updates(stack.connector, "informative")
    return informative, updates(stack.connector, "streaming"), final


async def test_personal_answer_streams_while_claude_writes(make_stack: StackFactory) -> None:
    stack = await make_stack(stream_interval_s=0)
    stack.anthropic.stream_delay_s = 0.05
    informative, streaming, final = await streamed_answer(stack)

    assert informative.stream_info == {"type": "streaminfo", "streamType": "informative",
                                       "streamSequence": 1}
    assert len(streaming) >= 2
    assert [u.stream_info for u in streaming] == [
        {"type": "streaminfo", "streamType": "streaming", "streamSequence": n,
         "streamId": informative.id} for n in range(2, len(streaming) + 2)]
    assert all(u.type == "typing" for u in streaming)
    texts = [u.text for u in streaming]
    assert all(a != b and b.startswith(a) for a, b in itertools.pairwise(texts))
    [written] = stack.anthropic.calls("answer")
    assert streaming[0].at < written.finished  # shown while Claude was still writing
    assert informative.at < streaming[0].at and streaming[-1].at < final.at

    assert final.stream_info == {"type": "streaminfo", "streamType": "final",
                                 "streamId": informative.id}
    assert final.text.startswith(texts[-1])  # the answer, then its notes
    [ai] = final.entities(AI)
    assert ai["additionalType"] == ["AIGeneratedContent"]
    assert [c["appearance"]["name"] for c in ai["citation"]][:1] == ["Setting up the VPN"]
    assert final.body["channelData"] == {"feedbackLoopEnabled": True}

    # Teams shows one message, the one the informative update created: feedback names it.
    status, _ = await stack.post(p.feedback_invoke(stack.service_url, p.personal_conversation(),
                                                   informative.id, "like"))
    assert status == 200
    [vote] = stack.stores.feedback.votes.values()
    assert (vote.vote, vote.channel) == (1, "button")


async def test_a_slow_informative_update_does_not_hold_up_the_answer(
        make_stack: StackFactory) -> None:
    stack = await make_stack(stream_interval_s=0)
    stack.connector.slow_when(stream_type("informative"), 1.0)
    informative, _, final = await streamed_answer(stack)
    [understood] = stack.anthropic.calls("understand")
    assert understood.started < informative.at + 1.0  # asked while Teams was still replying
    # still one message in Teams: the final one closes the stream the informative one opened
    assert final.stream_info == {"type": "streaminfo", "streamType": "final",
                                 "streamId": informative.id}


async def test_an_informative_update_that_fails_leaves_the_answer_whole(
        make_stack: StackFactory, caplog: pytest.LogCaptureFixture) -> None:
    stack = await make_stack(stream_interval_s=0)
    stack.connector.fail_when(stream_type("informative"), 500)
    await stack.post(personal(stack))
    [final] = await stack.connector.wait_for_messages(1)
    await stack.settle()
    assert final.stream_info is None and "[1]" in final.text
    assert not updates(stack.connector, "streaming")
    assert "could not start streaming; sending the answer whole" in caplog.text


async def test_updates_keep_to_the_interval_and_send_the_latest_text(
        make_stack: StackFactory) -> None:
    stack = await make_stack(stream_interval_s=0.4)
    stack.anthropic.stream_delay_s = 0.05
    stack.anthropic.answer_rule = lambda q, n: " ".join(["Follow the procedure [1]."] * 8)
    informative, streaming, final = await streamed_answer(stack)

    sent = [informative, *streaming, final]
    assert all(b.at - a.at >= 0.35 for a, b in itertools.pairwise(sent))
    assert 2 <= len(streaming) < 24  # 32 words written, far fewer updates
    # Words that arrived while an update waited went out together with it.
    assert any(len(b.text.split()) - len(a.text.split()) > 1
               for a, b in itertools.pairwise(streaming))


async def test_a_stream_breaking_off_ends_with_the_excerpts(make_stack: StackFactory) -> None:
    stack = await make_stack(stream_interval_s=0)
    stack.anthropic.stream_delay_s = 0.05
    stack.anthropic.script.append(Reply(200, raw="Install the WireGuard client first [1] and",
                                        kind="answer", break_after=3))
    informative, streaming, final = await streamed_answer(stack)

    assert streaming and streaming[-1].text.startswith("Install the")
    assert final.stream_info == {"type": "streaminfo", "streamType": "final",
                                 "streamId": informative.id}
    assert final.text.startswith(messages.LLM_DOWN_NOTE)  # the excerpts replace the beginning
    assert not final.text.startswith(streaming[-1].text)
    [row] = stack.stores.interactions.rows.values()
    assert row.answer.extractive and row.message_ref == informative.id


async def test_channel_mention_gets_one_message_and_no_stream(make_stack: StackFactory) -> None:
    stack = await make_stack(stream_interval_s=0)
    stack.anthropic.stream_delay_s = 0.05
    await stack.post(p.channel_mention(stack.service_url, QUESTION))
    [reply] = await stack.connector.wait_for_messages(1)
    await stack.settle()
    assert not any(r.stream_info for r in stack.connector.received)
    assert {r.type for r in stack.connector.received} == {"typing", "message"}
    assert all(r.text == "" for r in stack.connector.of_type("typing"))
    assert reply.entities(AI)[0]["citation"]


async def test_a_refused_update_stops_the_updates_not_the_answer(
        make_stack: StackFactory, caplog: pytest.LogCaptureFixture) -> None:
    stack = await make_stack(stream_interval_s=0)
    stack.anthropic.stream_delay_s = 0.05
    stack.connector.fail_when(stream_type("streaming"), 403, code="ContentStreamNotAllowed")
    informative, streaming, final = await streamed_answer(stack)

    [refused] = stack.connector.refused
    assert refused.stream_info and refused.stream_info["streamSequence"] == 2
    assert streaming == []  # nothing after the refusal
    assert final.stream_info == {"type": "streaminfo", "streamType": "final",
                                 "streamId": informative.id}
    assert final.entities(AI)[0]["citation"]
    assert "Teams refused a streaming update (403" in caplog.text


async def test_a_refused_end_of_stream_sends_the_answer_as_a_message(
        make_stack: StackFactory) -> None:
    stack = await make_stack(stream_interval_s=0)
    stack.anthropic.stream_delay_s = 0.05
    stack.connector.fail_when(stream_type("streaming"), 403, code="ContentStreamNotAllowed")
    stack.connector.fail_when(stream_type("final"), 403, code="ContentStreamNotAllowed")
    informative, _, final = await streamed_answer(stack)

    assert final.stream_info is None and final.entities(AI)[0]["citation"]
    [row] = stack.stores.interactions.rows.values()
    assert row.message_ref == final.id != informative.id  # feedback names the new message


@pytest.mark.parametrize("written", [
    "Ask <at>Jane Smith</at> [1] about it.",
    "Ask <AT id=\"0\">Jane</AT> or < at>Bob< /at> [2].",
    "Use `<at>` [1] and a < b, then <b>bold</b> and <img src=x> [2].",
    "A line <\n at>Jane</at> then more [1].",
])
def test_streamed_text_grows_into_the_rendered_answer(written: str) -> None:
    shown = [no_pings_so_far(preview_text(written[:end], 2)) for end in range(len(written) + 1)]
    assert all(b.startswith(a) for a, b in itertools.pairwise(shown))
    assert shown[-1] == no_pings(preview_text(written, 2))
    assert "<at" not in shown[-1].lower() and "<b" not in shown[-1]
