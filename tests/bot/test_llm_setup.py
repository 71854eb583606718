"""A provider that cannot work as set is one sentence naming the setting, at start-up."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from bot import llm_setup
from bot.cli import main
from bot.settings import Settings
from rag.errors import ConfigError
from tests.fakes.llm_rigs import NO_METADATA, running


@pytest.fixture
def no_cloud(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No credentials, region or profile from this machine: empty AWS and gcloud files."""
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
                 "GOOGLE_APPLICATION_CREDENTIALS", "CLOUD_ML_REGION", "GOOGLE_CLOUD_PROJECT",
                 "ANTHROPIC_VERTEX_PROJECT_ID", "SIFT_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "empty").write_text("")
    for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.setenv(name, str(tmp_path / "empty"))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))  # no ADC login file
    for name, value in NO_METADATA.items():
        monkeypatch.setenv(name, value)
    return tmp_path


def problem(**llm: str) -> str:
    with pytest.raises(ConfigError) as caught:
        llm_setup.resolve(Settings(llm=llm))
    assert caught.value.user_message == str(caught.value)
    return caught.value.user_message


BEDROCK = {"provider": "bedrock", "fast_model": "us.anthropic.claude-haiku-5-5-v1:0",
           "answer_model": "anthropic.claude-sonnet-5-5-v1:0"}


def test_bedrock_without_a_region_names_the_setting(no_cloud: Path) -> None:
    assert problem(**BEDROCK).startswith("SIFT_LLM__AWS_REGION is not set")


def test_bedrock_in_an_unknown_region_names_it(no_cloud: Path) -> None:
    assert problem(**BEDROCK, aws_region="us-middle-9").startswith(
        "SIFT_LLM__AWS_REGION 'us-middle-9' is not an AWS region")


def test_bedrock_without_credentials_says_where_they_come_from(no_cloud: Path) -> None:
    assert problem(**BEDROCK, aws_region="eu-central-1").startswith(
        "No AWS credentials for SIFT_LLM__PROVIDER=bedrock")


def test_bedrock_with_an_anthropic_model_name_names_the_model_setting(
        no_cloud: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    said = problem(provider="bedrock", aws_region="us-east-1")  # the default model names
    assert said.startswith("SIFT_LLM__FAST_MODEL 'claude-haiku-5-5' is not a Bedrock model id")
    assert llm_setup.resolve(Settings(llm={**BEDROCK, "aws_region": "us-east-1"})) == \
        llm_setup.Endpoint("bedrock", region="us-east-1")


def test_vertex_needs_a_region_a_real_one_and_credentials(no_cloud: Path) -> None:
    assert problem(provider="vertex").startswith("SIFT_LLM__VERTEX_REGION is not set")
    assert problem(provider="vertex", vertex_region="mars-north1x").startswith(
        "SIFT_LLM__VERTEX_REGION 'mars-north1x' is not a Google Cloud region")
    assert problem(provider="vertex", vertex_region="us-east5").startswith(
        "No Google credentials for SIFT_LLM__PROVIDER=vertex")


def test_openai_needs_a_server_or_a_key(no_cloud: Path) -> None:
    assert problem(provider="openai").startswith(
        "SIFT_LLM__PROVIDER=openai needs SIFT_LLM__BASE_URL")
    assert problem(provider="openai", base_url="https://x.openai.azure.com",
                   azure_api_version="2024-10-21").startswith("Azure OpenAI")


@pytest.mark.parametrize(("provider", "package"), [("bedrock", "botocore"),
                                                   ("vertex", "google.auth"),
                                                   ("openai", "openai")])
def test_a_provider_whose_extra_is_missing_names_the_extra(
        no_cloud: Path, monkeypatch: pytest.MonkeyPatch, provider: str, package: str) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # as if the package were not installed
    said = problem(provider=provider)
    assert said.startswith(f"SIFT_LLM__PROVIDER={provider} needs the '{provider}' extra")


async def test_a_model_the_server_does_not_serve_is_named(tmp_path: Path) -> None:
    async with running("openai", tmp_path) as rig:
        settings = Settings(llm={"provider": "openai", "base_url": f"{rig.fake.url}/v1",
                                 "api_key": "sk-fake-openai", "fast_model": "llama3.1:8b",
                                 "answer_model": "llama3.3:70b"})
        llm = llm_setup.build(settings, llm_setup.Endpoint("openai"))
        try:
            with pytest.raises(ConfigError) as caught:
                await llm_setup.verify_models(settings, llm)
            assert caught.value.user_message.startswith(
                "SIFT_LLM__ANSWER_MODEL 'llama3.3:70b' is not served at SIFT_LLM__BASE_URL")
            assert "it serves: llama3.1:8b, qwen2.5:14b" in caught.value.user_message
            wrong = settings.model_copy(update={"llm": settings.llm.model_copy(
                update={"answer_model": "qwen2.5:14b"})})
            await llm_setup.verify_models(wrong, llm)  # both served: nothing to say
        finally:
            await llm.close()


def test_sift_serve_stops_at_start_up_with_the_sentence(
        no_cloud: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()  # the CLI configures the root logger: put back afterwards
    monkeypatch.setattr(root, "handlers", root.handlers[:])
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setenv("SIFT_DATA_DIR", str(no_cloud / "data"))
    monkeypatch.setenv("SIFT_LLM__PROVIDER", "bedrock")
    monkeypatch.setenv("SIFT_LLM__AWS_REGION", "us-middle-9")
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sift: SIFT_LLM__AWS_REGION 'us-middle-9' is not an AWS region")
    assert not (no_cloud / "data" / "sift.db").exists()  # stopped before the database


def test_the_start_up_line_names_provider_place_and_models() -> None:
    settings = Settings(llm={**BEDROCK, "aws_region": "eu-central-1"})
    line = llm_setup.startup_line(settings, llm_setup.Endpoint("bedrock", region="eu-central-1"))
    assert line == ("LLM: bedrock (eu-central-1); fast model us.anthropic.claude-haiku-5-5-v1:0 "
                    "(understanding, grading), answer model anthropic.claude-sonnet-5-5-v1:0")
    assert llm_setup.startup_line(Settings(), None).startswith("LLM: off, fast mode")
