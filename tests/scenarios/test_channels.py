"""Channel policies and the Slack surfaces, replayed over signed HTTP to `sift serve` (fake
Slack Web API and Claude, real Weaviate and SQLite)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.settings import ChannelSettings, SourceSettings
from bot.slack.render import HELP_ACTION, SHARE_ACTION
from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from storage.models import Interaction
from tests.conftest import index_config
from tests.fakes.slack_payloads import (
    BOT_USER,
    CHANNEL,
    DM,
    USER,
    app_home_opened,
    assistant_thread_started,
    button_action,
    message,
    next_event_id,
    reaction,
    slash_command,
)
from tests.rag.builders import chunk
from tests.scenarios.slack_stack import Serve, SlackSift
from weaviate_server.process import ManagedWeaviate

pytestmark = pytest.mark.weaviate

HELP_CHANNEL, HR_CHANNEL, QUIET_CHANNEL, DESK_CHANNEL = "C0HELP01", "C0HR0001", "C0QUIET1", \
    "C0DESK01"
STAGING = "How do I rotate the staging database credentials?"
HR_HOLIDAYS = chunk("hr-holidays", "Annual leave in the HR handbook",
                    "Employees get 28 days of annual leave; HR approves carry-over requests.")
HR_HOLIDAYS = type(HR_HOLIDAYS)(**{**HR_HOLIDAYS.__dict__, "source": "hr",
                                   "chunk_id": "hr:hr-holidays:0"})


@pytest.fixture
async def with_hr(weaviate_server: ManagedWeaviate, corpus: str,
                  embedder: LocalEmbedder) -> AsyncIterator[str]:
    """The test corpus (source `kb`) plus one HR handbook chunk (source `hr`)."""
    index = WeaviateIndex(index_config(weaviate_server, corpus), embedder.name,
                          embedder.dimension)
    await index.connect()
    await index.upsert([HR_HOLIDAYS], await embedder.embed_documents(
        [f"{HR_HOLIDAYS.title}\n{HR_HOLIDAYS.text}"]))
    await index.close()
    yield corpus


def policies(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "kb").mkdir(exist_ok=True)
    (tmp_path / "hr").mkdir(exist_ok=True)
    return dict(
        sources=[SourceSettings(name="kb", kind="folder", path=tmp_path / "kb"),
                 SourceSettings(name="hr", kind="folder", path=tmp_path / "hr")],
        channels=[
            ChannelSettings(platform="slack", channel=HELP_CHANNEL, respond="questions"),
            ChannelSettings(platform="slack", channel=HR_CHANNEL, sources=["hr"]),
            ChannelSettings(platform="slack", channel=QUIET_CHANNEL, respond="questions",
                            only_when_confident=True),
            ChannelSettings(platform="slack", channel=DESK_CHANNEL,
                            escalate_to=["S0HELPDESK", "U0ONCALL1"]),
        ])


async def post_in(s: SlackSift, channel: str, text: str, ts: str, thread_ts: str = "") -> None:
    s.slack.add_message(channel, USER, text, ts, thread_ts)
    delivery = await s.driver.event(message(text, ts=ts, thread_ts=thread_ts, channel=channel,
                                            event_id=next_event_id()))
    assert delivery.status == 200


async def mention_in(s: SlackSift, channel: str, text: str, ts: str) -> None:
    from tests.fakes.slack_payloads import app_mention

    s.slack.add_message(channel, USER, f"<@{BOT_USER}> {text}", ts)
    payload = app_mention(f"<@{BOT_USER}> {text}", ts=ts, event_id=next_event_id())
    payload["event"]["channel"] = channel
    assert (await s.driver.event(payload)).status == 200


def posted_text(s: SlackSift, channel: str) -> str:
    return json.dumps([c.args for c in s.slack.calls_to("chat.postMessage")
                       if c.args.get("channel") == channel])


async def test_auto_answer_channel_answers_a_question_and_ignores_thanks(
        make_served: Serve, tmp_path: Path) -> None:
    s = await make_served(**policies(tmp_path))
    await post_in(s, HELP_CHANNEL, STAGING, "1700001000.000100")
    posted = await s.answer_in(HELP_CHANNEL)
    assert posted.args["channel"] == HELP_CHANNEL
    assert posted.args["thread_ts"] == "1700001000.000100"  # answered in the question's thread
    assert "staging-creds" in json.dumps(posted.args["blocks"])
    await post_in(s, HELP_CHANNEL, "thanks!", "1700001001.000100")
    await post_in(s, CHANNEL, STAGING, "1700001002.000100")  # no policy: mentions only
    await s.driver.settle()
    assert len(s.slack.calls_to("chat.postMessage")) == 1
    [row] = await s.rows(Interaction, 1)
    assert row.policy == f"slack:{HELP_CHANNEL}"


async def test_a_channel_scoped_to_one_source_never_cites_another(
        make_served: Serve, tmp_path: Path, with_hr: str) -> None:
    s = await make_served(**policies(tmp_path))
    await mention_in(s, HR_CHANNEL, "How many days of paid holiday do I get?", "1700002000.1")
    await mention_in(s, HR_CHANNEL, STAGING, "1700002001.1")
    await s.driver.settle()
    shown = posted_text(s, HR_CHANNEL)
    assert "wiki.example/hr-holidays" in shown
    for other in ("wiki.example/holidays", "staging-creds", "prod-creds"):
        assert other not in shown
    rows = await s.rows(Interaction, 2)
    assert {r.status for r in rows} == {"answered", "no_answer"}


async def test_only_when_confident_stays_silent_on_an_uncovered_question(
        make_served: Serve, tmp_path: Path) -> None:
    s = await make_served(**policies(tmp_path))
    await post_in(s, QUIET_CHANNEL, "What is the airspeed velocity of a laden swallow?",
                  "1700003000.000100")
    [row] = await s.rows(Interaction, 1)
    await s.driver.settle()
    assert row.status == "no_answer"
    assert s.slack.calls_to("chat.postMessage") == []
    assert s.slack.calls_to("chat.postEphemeral") == []


async def test_still_need_help_and_a_thumbs_down_call_the_configured_people(
        make_served: Serve, tmp_path: Path) -> None:
    s = await make_served(**policies(tmp_path))
    await mention_in(s, DESK_CHANNEL, STAGING, "1700004000.000100")
    answer = await s.answer_in(DESK_CHANNEL)
    buttons = [e for b in answer.args["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert [b["action_id"] for b in buttons] == [HELP_ACTION]
    answer_ts = s.slack.posted(DESK_CHANNEL)[0]["ts"]
    await s.rows(Interaction, 1, message_ref=answer_ts)
    await s.driver.click(button_action(HELP_ACTION, "", message_ts=answer_ts,
                                       thread_ts="1700004000.000100", channel=DESK_CHANNEL))
    calls = await s.slack.wait_for("chat.postMessage", 2)
    assert "<!subteam^S0HELPDESK> <@U0ONCALL1>" in calls[1].args["text"]
    assert calls[1].args["thread_ts"] == "1700004000.000100"
    payload = reaction("-1", answer_ts, event_id=next_event_id())
    payload["event"]["item"]["channel"] = DESK_CHANNEL
    await s.driver.event(payload)
    calls = await s.slack.wait_for("chat.postMessage", 3)
    assert "<!subteam^S0HELPDESK>" in calls[2].args["text"]


async def test_slash_command_answers_privately_and_share_posts_it(
        make_served: Serve, tmp_path: Path) -> None:
    s = await make_served(**policies(tmp_path))
    delivery = await s.driver.command(slash_command(STAGING, channel=CHANNEL))
    assert delivery.status == 200
    [private] = await s.slack.wait_for("chat.postEphemeral")
    assert (private.args["channel"], private.args["user"]) == (CHANNEL, USER)
    blocks = json.loads(private.args["blocks"]) if isinstance(private.args["blocks"], str) \
        else private.args["blocks"]
    [share] = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert share["action_id"] == SHARE_ACTION
    assert s.slack.calls_to("chat.postMessage") == []  # nobody else saw it yet
    [row] = await s.rows(Interaction, 1)
    assert share["value"] == str(row.id)
    await s.driver.click(button_action(SHARE_ACTION, share["value"], ephemeral=True,
                                       message_ts=private.args.get("ts", "1.1")))
    [shared] = await s.slack.wait_for("chat.postMessage")
    assert shared.args["channel"] == CHANNEL and "staging-creds" in json.dumps(shared.args)
    stranger = button_action(SHARE_ACTION, share["value"], ephemeral=True, message_ts="1.2",
                             user="U0STRANGE")
    await s.driver.click(stranger)  # only the asker may share their private answer
    await s.driver.settle()
    assert len(s.slack.calls_to("chat.postMessage")) == 1


async def test_app_home_lists_how_to_ask_and_the_persons_questions(
        make_served: Serve, tmp_path: Path) -> None:
    s = await make_served(**policies(tmp_path))
    await s.driver.dm(STAGING, ts="1700005000.000100")
    await s.answer_in(DM)
    await s.rows(Interaction, 1)
    await s.driver.event(app_home_opened())
    [published] = await s.slack.wait_for("views.publish")
    view = published.args["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert published.args["user_id"] == USER and view["type"] == "home"
    text = json.dumps(view)
    assert "/sift" in text and STAGING in text and "kb" in text and "hr" in text


async def test_assistant_thread_gets_suggested_prompts_and_a_title(
        make_served: Serve, tmp_path: Path) -> None:
    s = await make_served(**policies(tmp_path))
    await s.driver.event(assistant_thread_started("1729999327.187299"))
    [prompts] = await s.slack.wait_for("assistant.threads.setSuggestedPrompts")
    assert (prompts.args["channel_id"], prompts.args["thread_ts"]) == (DM, "1729999327.187299")
    sent = prompts.args["prompts"]
    sent = json.loads(sent) if isinstance(sent, str) else sent
    assert sent and all({"title", "message"} <= set(p) for p in sent)
    await s.slack.wait_for("assistant.threads.setTitle")


async def test_a_policy_edit_applies_to_the_next_message(
        make_served: Serve, tmp_path: Path) -> None:
    s = await make_served(**policies(tmp_path))
    stored = s.sift.app.channel_policies  # the CLI and the console write here
    await asyncio.to_thread(stored.put, "slack", CHANNEL, "now helpful",
                            {"respond": "questions"})
    await post_in(s, CHANNEL, STAGING, "1700006001.000100")
    posted = await s.answer_in(CHANNEL)
    assert posted.args["thread_ts"] == "1700006001.000100"
    await s.rows(Interaction, 1)
    assert await asyncio.to_thread(stored.remove, "slack", CHANNEL)
    await post_in(s, CHANNEL, STAGING, "1700006002.000100")  # back to mentions only
    await s.driver.settle()
    assert len(s.slack.calls_to("chat.postMessage")) == 1
