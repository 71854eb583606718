"""A signed Slack event through `sift serve`, answered graded and cited through each LLM
provider's fake: Anthropic, Claude on Bedrock and on Vertex AI, an OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from rag.embed import LocalEmbedder
from storage.models import Interaction
from tests.fakes.llm_rigs import PROVIDERS, running
from tests.fakes.slack_payloads import BOT_TOKEN, BOT_USER, CHANNEL, SIGNING_SECRET
from tests.fakes.slack_server import FakeSlack
from tests.scenarios.slack_stack import serve_on_slack, stop_all
from tests.scenarios.stack import corpus, settings_for  # noqa: F401
from weaviate_server.process import ManagedWeaviate

pytestmark = pytest.mark.weaviate

QUESTION = "How do I rotate the staging database credentials?"
Q_TS = "1700000000.000100"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_mention_is_answered_through_each_provider(
        provider: str, tmp_path: Path, weaviate_server: ManagedWeaviate,
        corpus: str, embedder: LocalEmbedder, fake_slack: FakeSlack,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with running(provider, tmp_path) as rig:
        for name, value in rig.env.items():  # the provider's settings and cloud credentials
            monkeypatch.setenv(name, value)
        settings = settings_for(tmp_path, weaviate_server, corpus, rig.fake,
                                slack_bot_token=SecretStr(BOT_TOKEN),
                                slack_signing_secret=SecretStr(SIGNING_SECRET),
                                slack_api_url=fake_slack.api_url, sources=[])
        assert settings.llm.provider == provider
        served = await serve_on_slack(settings, embedder, fake_slack)
        try:
            await served.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts=Q_TS)
            posted = await served.answer_in(CHANNEL)
            [row] = await served.rows(Interaction, 1)
        finally:
            await stop_all([served])
    assert posted.args["thread_ts"] == Q_TS
    assert "<https://wiki.example/staging-creds|[1]>" in posted.args["blocks"][0]["text"]["text"]
    assert (row.status, row.mode) == ("answered", "accurate")
    assert (row.models["grade"], row.models["generate"]) == (rig.fast_model, rig.answer_model)
    assert rig.fake.calls("grade") and len(rig.fake.calls("answer")) == 1
    assert row.usage["grade"]["calls"] == len(rig.fake.calls("grade"))
