"""A German question through `sift serve` with fake Slack: a German answer from the fake
Claude, and Sift's own sentences in German in fast mode (docs/languages.md)."""

from __future__ import annotations

import json

import pytest

from rag import messages
from storage.models import Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import DM, USER
from tests.fakes.slack_server import Call
from tests.scenarios.language_support import (
    ENGLISH_PHRASE,
    GERMAN,
    GERMAN_ANSWER,
    RETRIEVAL_NOTE_DE,
    grade_staging,
    mark_english,
)
from tests.scenarios.slack_stack import Serve, SlackSift

pytestmark = pytest.mark.weaviate


def german_speaker(s: SlackSift) -> None:
    s.slack.users[USER] = {"id": USER, "name": "jana", "locale": "de-DE",
                           "profile": {"display_name": "Jana"}}


def locale_lookups(s: SlackSift) -> list[Call]:
    return [c for c in s.slack.calls_to("users.info")
            if str(c.args.get("include_locale")).lower() in ("true", "1")]


async def test_a_german_question_gets_a_german_answer_from_claude(
        make_served: Serve, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.phrases_in_corpus[GERMAN] = [ENGLISH_PHRASE]
    fake_anthropic.grade_rule = grade_staging
    s = await make_served()
    german_speaker(s)
    await mark_english(s.sift.app)
    await s.driver.dm(GERMAN, ts="1700000200.000400")
    posted = await s.answer_in(DM)
    shown = json.dumps([posted.args.get("text"), posted.args.get("blocks")], ensure_ascii=False)
    assert GERMAN_ANSWER.removesuffix(" [1].") in shown and "*Quellen*" in shown
    assert "Diese Antwort als hilfreich markieren" in shown  # the 👍 button's label
    understand = fake_anthropic.calls("understand")[-1].body["messages"][-1]["content"]
    assert "The knowledge base is written in English; this message is in German." in understand
    answer = fake_anthropic.calls("answer")[-1].body["messages"][-1]["content"]
    assert "Write the answer in German" in answer
    [row] = await s.rows(Interaction, 1, message_channel=DM)
    assert row.status == "answered" and row.question == GERMAN
    [info] = locale_lookups(s)
    assert info.args["user"] == USER


async def test_fast_mode_speaks_german_and_says_english_finds_more(make_served: Serve) -> None:
    s = await make_served(anthropic_api_key=None)
    german_speaker(s)
    await mark_english(s.sift.app)
    await s.driver.dm(GERMAN, ts="1700000300.000500")
    posted = await s.answer_in(DM)
    shown = json.dumps([posted.args.get("text"), posted.args.get("blocks")], ensure_ascii=False)
    assert RETRIEVAL_NOTE_DE in shown
    assert ("Hier sind die passendsten Auszüge" in shown
            or "Ich habe in der Wissensdatenbank keine Antwort darauf gefunden." in shown)
    assert messages.EXTRACTIVE_LABEL not in shown and messages.NO_ANSWER not in shown
    # A second question from the same person: the locale is remembered, not asked again.
    await s.driver.dm("Wie richte ich das VPN auf meinem Laptop ein?", ts="1700000301.000500")
    await s.answer_in(DM, 2)
    assert len(locale_lookups(s)) == 1


async def test_an_english_speaker_hears_english(make_served: Serve) -> None:
    s = await make_served(anthropic_api_key=None)
    await mark_english(s.sift.app)
    await s.driver.dm("How do I set up the VPN?", ts="1700000400.000600")
    shown = json.dumps((await s.answer_in(DM)).args, ensure_ascii=False)
    assert messages.EXTRACTIVE_LABEL in shown and "Hinweis" not in shown
