"""The canary suite at the pipeline: who asks where (the resolver) decides what is retrieved,
graded, sent to Claude, streamed as a preview and answered, on a real Weaviate."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.app import App
from bot.chat.access import Asker, Audience, Visibility
from bot.settings import GroupSettings
from bot.slack.spec import PLATFORM as SLACK_PLATFORM
from rag.embed import LocalEmbedder
from rag.types import AnswerStatus, AskContext, Question
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import BOT_TOKEN
from tests.fakes.slack_server import FakeSlack
from tests.permissions.canary import HR_EMAIL, QUESTION, markers_in, param_id, visible
from tests.scenarios.stack import settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    server.add_user("UHANA", HR_EMAIL)
    server.add_user("UFAY", "fay@finance.acme.example")
    server.add_user("UEVE", "eve@x.example")
    server.add_user("UOPS", "olu@acme.example")
    server.add_usergroup("S1", "people-ops", ["UOPS"])
    yield server
    await server.stop()


@pytest.fixture
async def app(tmp_path: Path, weaviate_server: ManagedWeaviate, canary_collection: str,
              fake_anthropic: FakeAnthropic, slack: FakeSlack,
              embedder: LocalEmbedder) -> AsyncIterator[App]:
    groups = [GroupSettings(name="hr", emails=[HR_EMAIL], slack_usergroups=["people-ops"]),
              GroupSettings(name="finance", domains=["finance.acme.example"])]
    app = App(settings_for(tmp_path, weaviate_server, canary_collection, fake_anthropic,
                           groups=groups, slack_bot_token=SecretStr(BOT_TOKEN),
                           slack_api_url=slack.api_url))
    app.__dict__["embedder"] = embedder  # the session's model, not a second load
    app.database.upgrade()
    yield app
    await app.aclose()


class Previews:
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, text: str) -> None:
        self.texts.append(text)


ASKERS = [
    ("UHANA", Visibility.PRIVATE, (), visible("hr")),  # a DM: hr by email
    ("UOPS", Visibility.PRIVATE, (), visible("hr")),  # a DM: hr by Slack user group
    ("UFAY", Visibility.PRIVATE, (), visible("finance")),  # a DM: finance by domain
    ("UEVE", Visibility.PRIVATE, (), visible()),  # a DM: in no group
    ("UHANA", Visibility.CHANNEL, (), visible()),  # hr's member in a plain channel
    ("UEVE", Visibility.CHANNEL, ("hr",), visible("hr")),  # anyone in #hr-team (audience hr)
    ("UHANA", Visibility.CHANNEL, ("finance", "secops"), visible("finance")),  # secops: undeclared
]


@pytest.mark.parametrize(("user", "visibility", "audience", "expected"), ASKERS,
                         ids=param_id)
async def test_each_marker_reaches_exactly_the_places_it_may(
        app: App, echoing_claude: FakeAnthropic, user: str, visibility: Visibility,
        audience: tuple[str, ...], expected: set[str]) -> None:
    groups = await app.access_resolver.groups_for(
        Asker(SLACK_PLATFORM, user, "T111"), Audience(visibility, audience))
    index = app.index()
    await index.connect()
    try:
        pipeline = app.pipeline(index, recorder=app.interactions, cache=app.grade_cache)
        previews = Previews()
        answer = await pipeline.answer(Question(QUESTION, AskContext(
            SLACK_PLATFORM, "T111", "C1", user=user, access_groups=groups)), preview=previews)
    finally:
        await index.close()
    assert answer.status is AnswerStatus.ANSWERED
    assert markers_in(json.dumps([r.body for r in echoing_claude.requests])) == expected
    assert markers_in(answer.text) == expected
    assert markers_in(" ".join(previews.texts)) <= expected and previews.texts
    assert markers_in(" ".join(c.chunk.text for c in answer.candidates)) == expected
    assert markers_in(" ".join(c.title for c in answer.citations)) <= expected
