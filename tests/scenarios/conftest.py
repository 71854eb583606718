"""Fixtures of the end-to-end scenarios: the test corpus in Weaviate, a served Sift on Slack."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from rag.embed import LocalEmbedder
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import BOT_TOKEN, SIGNING_SECRET
from tests.fakes.slack_server import FakeSlack
from tests.scenarios.slack_stack import Serve, SlackSift, serve_on_slack, stop_all
from tests.scenarios.stack import ServedSift, corpus, settings_for  # noqa: F401
from weaviate_server.process import ManagedWeaviate


@pytest.fixture
async def make_served(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,  # noqa: F811
                      embedder: LocalEmbedder, fake_anthropic: FakeAnthropic,
                      fake_slack: FakeSlack) -> AsyncIterator[Serve]:
    running: list[SlackSift] = []

    async def make(weaviate: ManagedWeaviate | None = None, **kw: Any) -> SlackSift:
        values: dict[str, Any] = dict(
            slack_bot_token=SecretStr(BOT_TOKEN), slack_signing_secret=SecretStr(SIGNING_SECRET),
            slack_api_url=fake_slack.api_url, sources=[])
        values.update(kw)
        settings = settings_for(tmp_path, weaviate or weaviate_server, corpus, fake_anthropic,
                                **values)
        running.append(await serve_on_slack(settings, embedder, fake_slack))
        return running[-1]

    yield make
    await stop_all(running)
