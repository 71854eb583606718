"""The answers loop through `sift serve` with fake Slack: a question Sift cannot answer, an
expert's reply in the thread, the asker's ✅, a pending draft, `sift answers approve`, and the
same question answered from the approved entry, cited to the thread."""

from __future__ import annotations

import asyncio
import json

import pytest
from sqlalchemy import select

from bot.settings import ChannelSettings
from bot.slack.render import SAVE_ANSWER_ACTION
from rag import messages
from storage.models import AnswerDraft, AuditEntry, ClosedGap, HelpQuestion, Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import (
    BOT_USER,
    CHANNEL,
    USER,
    button_action,
    message,
    message_shortcut,
    next_event_id,
    reaction,
)
from tests.scenarios.sift_cli import cli_settings, sift
from tests.scenarios.slack_stack import Serve, SlackSift

pytestmark = pytest.mark.weaviate

EXPERT = "U0DANA01"
QUESTION = "How can I get a parking badge for the Lisbon office?"
REPLY = ("Parking badges for the Lisbon office come from the facilities desk on floor 2: "
         "bring your staff card and the car's plate number.")
Q_TS, R_TS = "1764700000.000100", "1764700300.000200"
NEAR = "Where do I get a parking badge at the Lisbon office?"
OTHER = "Which printer should I use on the third floor?"
LINK = (f"https://acme.slack.com/archives/{CHANNEL}/p1764700300000200"
        f"?thread_ts={Q_TS}&cid={CHANNEL}")


OFFER = messages.SAVE_OFFER.format(replier=f"<@{EXPERT}>")


async def ephemeral_texts(s: SlackSift) -> list[str]:
    """The two ephemeral messages, sorted: the save offer (for the expert's reply) and the
    thanks (for the tick) come from two events handled side by side, in either order."""
    return sorted(call.args["text"] for call in await s.slack.wait_for("chat.postEphemeral", 2))


def closed_gaps(s: SlackSift) -> list[ClosedGap]:
    with s.sift.app.database.read() as session:
        return list(session.scalars(select(ClosedGap)))


async def unanswered_then_expert(s: SlackSift) -> Interaction:
    """The question gets "not covered"; Dana replies in its thread."""
    s.slack.add_channel(CHANNEL, "it-help", members=[USER, EXPERT])
    s.slack.add_user(EXPERT, name="dana")
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
    posted = await s.answer_in(CHANNEL)
    assert posted.args["thread_ts"] == Q_TS
    [asked] = await s.rows(Interaction, 1, status="no_answer")
    await s.driver.reply(REPLY, ts=R_TS, thread_ts=Q_TS, user=EXPERT)
    return asked


async def test_the_askers_tick_captures_the_reply_and_approval_answers_the_question(
        make_served: Serve, monkeypatch: pytest.MonkeyPatch,
        fake_anthropic: FakeAnthropic) -> None:
    s = await make_served()
    asked = await unanswered_then_expert(s)
    await s.driver.event(reaction("white_check_mark", R_TS, item_user=EXPERT,
                                  event_id=next_event_id()))
    [draft] = await s.rows(AnswerDraft, 1)
    assert (draft.status, draft.author, draft.author_name, draft.asker) == \
        ("pending", EXPERT, "dana", USER)
    assert (draft.channel_name, draft.channel_kind, draft.access) == \
        ("#it-help", "public", ["public"])
    assert (draft.link, draft.interaction_id, draft.question) == (LINK, asked.id, QUESTION)
    assert await ephemeral_texts(s) == sorted([OFFER, messages.ANSWER_CAPTURED])
    # Two more gaps: the same question in other words, and another one.
    for n, (text, ts) in enumerate(((NEAR, "1764710000.000100"),
                                    (OTHER, "1764720000.000100")), start=2):
        await s.driver.mention(f"<@{BOT_USER}> {text}", ts=ts, user=EXPERT)
        await s.answer_in(CHANNEL, n)
    near, other = (await s.rows(Interaction, 3, status="no_answer"))[1:]
    with cli_settings(s.sift, monkeypatch):
        _, listed = await sift("answers", "list", "--json")
        assert [(d["id"], d["answer"], d["status"]) for d in listed] == \
            [(draft.id, REPLY, "pending")]  # no model rewrite: the fake's reply is not JSON
        _, approved = await sift("answers", "approve", str(draft.id), "--json")
    assert approved["status"] == "approved"
    # Its question and the paraphrase are answered now and close; the other gap stays open.
    assert approved["reasked"] == {"outcome": "answered", "cited_entry": True,
                                   "closed_gaps": [asked.id, near.id]}
    closed = await asyncio.to_thread(closed_gaps, s)
    assert {(c.interaction_id, c.draft_id) for c in closed} == \
        {(asked.id, draft.id), (near.id, draft.id)} and other.id not in \
        {c.interaction_id for c in closed}
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts="1764800000.000100")
    again = await s.answer_in(CHANNEL, 4)
    shown = json.dumps(again.args["blocks"])
    assert f"<{LINK.replace('&', '&amp;')}|[1]>" in shown  # mrkdwn escapes the &
    assert "Answered by dana in #it-help, 2 Dec 2025" in shown
    await s.rows(Interaction, 1, status="answered")


async def test_an_experts_reply_is_approved_as_it_is_captured_and_answers_at_once(
        make_served: Serve) -> None:
    s = await make_served(channels=[ChannelSettings(platform="slack", channel="*",
                                                    experts=[EXPERT])])
    asked = await unanswered_then_expert(s)
    await s.driver.event(reaction("white_check_mark", R_TS, item_user=EXPERT,
                                  event_id=next_event_id()))
    [draft] = await s.rows(AnswerDraft, 1, status="approved")
    assert (draft.reviewed_by, draft.author, draft.interaction_id) == \
        (f"expert:{EXPERT}", EXPERT, asked.id)
    assert await ephemeral_texts(s) == sorted([OFFER, messages.ANSWER_CAPTURED_APPROVED])
    [entry] = await s.rows(AuditEntry, 1, action="answer_approved")
    assert entry.actor == f"expert:{EXPERT}"
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts="1764800000.000100")
    again = await s.answer_in(CHANNEL, 2)
    assert "Answered by dana in #it-help" in json.dumps(again.args["blocks"])


async def test_a_reply_from_someone_not_named_an_expert_waits_for_review(
        make_served: Serve) -> None:
    s = await make_served(channels=[ChannelSettings(platform="slack", channel="*",
                                                    experts=["U0SOMEONE"])])
    await unanswered_then_expert(s)
    await s.driver.event(reaction("white_check_mark", R_TS, item_user=EXPERT,
                                  event_id=next_event_id()))
    [draft] = await s.rows(AnswerDraft, 1)
    await s.driver.settle()
    assert draft.status == "pending"
    assert await ephemeral_texts(s) == sorted([OFFER, messages.ANSWER_CAPTURED])


async def test_a_tick_from_someone_else_or_where_sift_answered_captures_nothing(
        make_served: Serve) -> None:
    s = await make_served()
    await unanswered_then_expert(s)
    # Not the asker: a bystander's ✅ is only a reaction.
    await s.driver.event(reaction("white_check_mark", R_TS, item_user=EXPERT, user=EXPERT,
                                  event_id=next_event_id()))
    # The asker's ✅ on a question Sift answered (the staging one): not a gap, nothing saved.
    await s.driver.mention(f"<@{BOT_USER}> How do I rotate the staging database credentials?",
                           ts="1764900000.000100")
    await s.answer_in(CHANNEL, 2)
    await s.rows(Interaction, 1, status="answered")
    s.slack.add_message(CHANNEL, EXPERT, "Also restart the api pods.", "1764900100.000100",
                        "1764900000.000100")
    await s.driver.event(reaction("white_check_mark", "1764900100.000100", item_user=EXPERT,
                                  event_id=next_event_id()))
    await s.driver.settle()
    assert await asyncio.to_thread(s.sift.rows, AnswerDraft) == []


async def test_save_to_sift_shortcut_captures_any_reply_once(make_served: Serve) -> None:
    s = await make_served()
    await unanswered_then_expert(s)
    for _ in range(2):  # a second save finds the same draft
        delivery = await s.driver.click(message_shortcut(R_TS, text=REPLY, author=EXPERT,
                                                         thread_ts=Q_TS, user=EXPERT))
        assert delivery.status == 200
    await s.rows(AnswerDraft, 1)
    await s.driver.settle()
    [draft] = await asyncio.to_thread(s.sift.rows, AnswerDraft)
    assert (draft.captured_by, draft.answer, draft.asker) == ("shortcut", REPLY, USER)
    notices = [c.args["text"] for c in s.slack.calls_to("chat.postEphemeral")]
    assert notices.count(messages.ANSWER_CAPTURED) == 2


async def test_save_to_sift_on_a_question_itself_is_refused_in_one_sentence(
        make_served: Serve) -> None:
    s = await make_served()
    await unanswered_then_expert(s)
    await s.driver.click(message_shortcut(Q_TS, text=QUESTION, thread_ts=Q_TS))
    await s.driver.settle()
    notices = [c.args["text"] for c in s.slack.calls_to("chat.postEphemeral")]
    assert messages.ANSWER_NOT_CAPTURABLE in notices
    assert await asyncio.to_thread(s.sift.rows, AnswerDraft) == []


async def test_a_help_channels_holdout_gets_silence_and_the_report_counts_both_arms(
        make_served: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await make_served(channels=[ChannelSettings(platform="slack", channel="*",
                                                    respond="questions", holdout=0.5)])
    s.slack.add_channel(CHANNEL, "it-help", members=[USER, EXPERT])
    stamps = [f"17647{n:05d}.000100" for n in range(12)]
    for n, ts in enumerate(stamps):
        s.slack.add_message(CHANNEL, USER, f"How do I rotate the staging credentials {n}?", ts)
        await s.driver.event(message(f"How do I rotate the staging credentials {n}?", ts=ts,
                                     event_id=next_event_id()))
    rows = await s.rows(HelpQuestion, 12)
    arms = {r.thread: r.arm for r in rows}
    held = [ts for ts in stamps if arms[ts] == "holdout"]
    assert len(arms) == 12 and 0 < len(held) < 12  # both arms, by the policy's share
    await s.slack.wait_for("chat.postMessage", 12 - len(held))
    # Dana answers the first held-out question; its asker's ✅ resolves it by a person.
    reply_ts = held[0][:-1] + "9"
    await s.driver.reply(REPLY, ts=reply_ts, thread_ts=held[0], user=EXPERT)
    await s.driver.event(reaction("white_check_mark", reply_ts, item_user=EXPERT,
                                  event_id=next_event_id()))
    await s.rows(HelpQuestion, 1, thread=held[0], resolved_by="person")
    await s.driver.settle()
    answered = {c.args["thread_ts"] for c in s.slack.calls_to("chat.postMessage")}
    assert answered == {ts for ts in stamps if arms[ts] == "sift"}  # silence on the holdout
    with cli_settings(s.sift, monkeypatch):
        _, report = await sift("report", "--since", "3650d", "--json")
    with_sift, without = report["deflection"]["overall"]
    assert (with_sift["arm"], with_sift["questions"]) == ("sift", 12 - len(held))
    assert (without["arm"], without["questions"], without["by_person"]) == \
        ("holdout", len(held), 1)


async def test_the_asker_is_offered_to_save_a_persons_reply_and_only_their_click_counts(
        make_served: Serve) -> None:
    s = await make_served()
    await unanswered_then_expert(s)
    [offer] = await s.slack.wait_for("chat.postEphemeral")
    assert (offer.args["user"], offer.args["thread_ts"]) == (USER, Q_TS)
    assert f"<@{EXPERT}>" in offer.args["text"]
    [button] = [e for b in offer.args["blocks"] if b["type"] == "actions"
                for e in b["elements"]]
    assert (button["action_id"], button["value"]) == (SAVE_ANSWER_ACTION, R_TS)
    # A second reply in the same thread is not offered again.
    await s.driver.reply("Also try the front desk.", ts="1764700400.000300", thread_ts=Q_TS,
                         user=EXPERT)
    await asyncio.sleep(0.5)  # time enough for an offer the reply would have made
    assert len(s.slack.calls_to("chat.postEphemeral")) == 1
    # Someone else's click on the asker's button (a forged one) saves nothing.
    await s.driver.click(button_action(SAVE_ANSWER_ACTION, R_TS, message_ts=R_TS,
                                       thread_ts=Q_TS, user=EXPERT, ephemeral=True))
    refused = await s.slack.wait_for("chat.postEphemeral", 2)
    assert refused[-1].args["text"] == messages.SAVE_NOT_YOURS
    assert await asyncio.to_thread(s.sift.rows, AnswerDraft) == []
    await s.driver.click(button_action(SAVE_ANSWER_ACTION, R_TS, message_ts=R_TS,
                                       thread_ts=Q_TS, user=USER, ephemeral=True))
    [draft] = await s.rows(AnswerDraft, 1)
    assert (draft.captured_by, draft.author, draft.reply, draft.status) == \
        ("button", EXPERT, REPLY, "pending")
    thanks = await s.slack.wait_for("chat.postEphemeral", 3)
    assert thanks[-1].args["text"] == messages.ANSWER_CAPTURED
