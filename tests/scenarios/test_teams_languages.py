"""A German question through `sift serve` with fake Teams: the activity's locale picks Sift's
sentences, the fake Claude answers in German (docs/languages.md)."""

from __future__ import annotations

import pytest

from rag import messages
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import FakeAnthropic
from tests.scenarios.language_support import (
    ENGLISH_PHRASE,
    GERMAN,
    GERMAN_ANSWER,
    RETRIEVAL_NOTE_DE,
    grade_staging,
    mark_english,
)
from tests.scenarios.test_teams import Serve, fake_connector, make_served  # noqa: F401

pytestmark = pytest.mark.weaviate


async def test_a_german_teams_question_gets_a_german_answer(
        make_served: Serve, fake_anthropic: FakeAnthropic) -> None:  # noqa: F811
    fake_anthropic.phrases_in_corpus[GERMAN] = [ENGLISH_PHRASE]
    fake_anthropic.grade_rule = grade_staging
    sift = await make_served()
    await mark_english(sift.app)
    await sift.post(p.personal_message(sift.connector.service_url, GERMAN, locale="de-DE"))
    [reply] = await sift.connector.wait_for_messages(1)
    assert reply.text.startswith(GERMAN_ANSWER)
    working = [r for r in sift.connector.of_type("typing") if r.stream_info]
    assert working and working[0].text == "Ich durchsuche die Wissensdatenbank und prüfe, " \
        "was ich finde…"


async def test_fast_mode_teams_speaks_german(make_served: Serve) -> None:  # noqa: F811
    sift = await make_served(anthropic_api_key=None)
    await mark_english(sift.app)
    await sift.post(p.personal_message(sift.connector.service_url, GERMAN, locale="de-DE"))
    [reply] = await sift.connector.wait_for_messages(1)
    assert RETRIEVAL_NOTE_DE in reply.text
    assert messages.EXTRACTIVE_LABEL not in reply.text and messages.NO_ANSWER not in reply.text
    assert "Hier sind die passendsten Auszüge" in reply.text or \
        "Ich habe in der Wissensdatenbank keine Antwort darauf gefunden." in reply.text
