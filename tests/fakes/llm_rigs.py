"""Each LLM provider's fake with what it takes to reach it: the settings (environment) a Sift
process needs, and an adapter built the way bot/llm_setup.py builds it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes import bedrock_server, vertex_server
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.bedrock_server import FakeBedrock
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.vertex_server import FakeVertex

PROVIDERS = ("anthropic", "bedrock", "vertex", "openai")
# Model ids as each platform names them.
MODELS = {"anthropic": ("claude-haiku-5-5", "claude-sonnet-5-5"),
          "bedrock": ("us.anthropic.claude-haiku-5-5-20261001-v1:0",
                      "us.anthropic.claude-sonnet-5-5-20261001-v1:0"),
          "vertex": ("claude-haiku-5-5@20261001", "claude-sonnet-5-5@20261001"),
          "openai": ("llama3.1:8b", "qwen2.5:14b")}
# Nothing on this machine may reach a cloud's metadata address looking for credentials.
NO_METADATA = {"AWS_EC2_METADATA_DISABLED": "true", "NO_GCE_CHECK": "True"}


@dataclass
class Rig:
    """One provider's fake, running, and the environment that points Sift at it."""

    provider: str
    fake: FakeAnthropic
    env: dict[str, str] = field(default_factory=dict)

    @property
    def fast_model(self) -> str:
        return MODELS[self.provider][0]

    @property
    def answer_model(self) -> str:
        return MODELS[self.provider][1]

    def llm(self, **options: Any) -> Any:
        """The adapter bot/llm_setup.py builds for these settings (its environment must be
        set: the clouds' credential chains read it)."""
        return adapter(self.env, **options)


def adapter(env: dict[str, str], **options: Any) -> Any:
    """The LLM adapter `env`'s settings name, built as bot/llm_setup.py builds it."""
    from bot import llm_setup
    from bot.settings import Settings

    llm = {"max_retries": 2, "timeout_s": 10.0, **options}
    settings = Settings(**_nested(env), llm={**_llm_section(env), **llm})
    endpoint = llm_setup.resolve(settings)
    assert endpoint is not None
    return llm_setup.build(settings, endpoint)


def _llm_section(env: dict[str, str]) -> dict[str, str]:
    prefix = "SIFT_LLM__"
    return {k.removeprefix(prefix).lower(): v for k, v in env.items() if k.startswith(prefix)}


def _nested(env: dict[str, str]) -> dict[str, str]:
    names = {"SIFT_ANTHROPIC_API_KEY": "anthropic_api_key",
             "SIFT_ANTHROPIC_BASE_URL": "anthropic_base_url"}
    return {names[k]: v for k, v in env.items() if k in names}


def provider_env(provider: str, fake: FakeAnthropic, tmp: Path) -> dict[str, str]:
    """The settings and cloud-credential variables for `provider`, pointed at `fake`."""
    fast, answer = MODELS[provider]
    env = {"SIFT_LLM__PROVIDER": provider, "SIFT_LLM__FAST_MODEL": fast,
           "SIFT_LLM__ANSWER_MODEL": answer, **NO_METADATA}
    if provider == "anthropic":
        return {**env, "SIFT_ANTHROPIC_API_KEY": "sk-test-key",
                "SIFT_ANTHROPIC_BASE_URL": fake.url}
    if provider == "bedrock":  # botocore's chain: the environment's keys come first
        return {**env, "SIFT_LLM__BASE_URL": fake.url,
                "SIFT_LLM__AWS_REGION": bedrock_server.REGION,
                "AWS_ACCESS_KEY_ID": bedrock_server.ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": bedrock_server.SECRET_KEY}
    if provider == "vertex":  # google-auth's chain: GOOGLE_APPLICATION_CREDENTIALS first
        assert isinstance(fake, FakeVertex)
        return {**env, "SIFT_LLM__BASE_URL": f"{fake.url}/v1",
                "SIFT_LLM__VERTEX_REGION": vertex_server.REGION,
                "SIFT_LLM__VERTEX_PROJECT": vertex_server.PROJECT,
                "GOOGLE_APPLICATION_CREDENTIALS": str(fake.credentials_file(tmp))}
    assert isinstance(fake, FakeOpenAI) and fake.api_key is not None
    return {**env, "SIFT_LLM__BASE_URL": f"{fake.url}/v1", "SIFT_LLM__API_KEY": fake.api_key}


def new_fake(provider: str) -> FakeAnthropic:
    return {"anthropic": FakeAnthropic, "bedrock": FakeBedrock, "vertex": FakeVertex,
            "openai": FakeOpenAI}[provider]()


@asynccontextmanager
async def running(provider: str, tmp: Path) -> AsyncIterator[Rig]:
    """`provider`'s fake started, with the environment that reaches it."""
    fake = new_fake(provider)
    await fake.start()
    try:
        yield Rig(provider, fake, provider_env(provider, fake, tmp))
    finally:
        await fake.stop()
