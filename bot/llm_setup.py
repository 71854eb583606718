"""The model service from the settings: checked at start-up (one sentence naming the setting),
then built as the one adapter behind rag's LLM port."""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from typing import Any

from bot.settings import LLMSettings, Settings
from rag.errors import ConfigError
from rag.llm_retry import OutcomeSink

# The package each provider needs, and the extra of Sift's that brings it.
EXTRAS = {"bedrock": ("botocore", "bedrock"), "vertex": ("google.auth", "vertex"),
          "openai": ("openai", "openai")}
# Bedrock names Claude by model id (anthropic.claude-…), a cross-region inference profile
# (us.anthropic.claude-…, global.anthropic.claude-…) or an ARN (provisioned throughput,
# application inference profiles).
_BEDROCK_MODEL = re.compile(r"^([a-z-]+\.)?anthropic\.claude[\w.:-]*$|^arn:aws[\w-]*:bedrock:")
# Vertex locations: a region (us-east5, europe-west1) or a multi-region endpoint.
_VERTEX_REGION = re.compile(r"^[a-z]+-[a-z]+\d+$|^(global|us|eu)$")
_GOOGLE_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


@dataclass(frozen=True)
class Endpoint:
    """Where the calls go, resolved from the settings and the provider's own chain."""

    provider: str
    region: str = ""
    project: str = ""
    url: str = ""  # an OpenAI-compatible server's address

    def describe(self) -> str:
        where = ", ".join(p for p in (self.project, self.region, self.url) if p)
        return f"{self.provider} ({where})" if where else self.provider


def _fail(sentence: str) -> ConfigError:
    return ConfigError(sentence, user_message=sentence)


def _need_extra(provider: str) -> None:
    module, extra = EXTRAS[provider]
    try:
        importlib.import_module(module)
    except ImportError:
        raise _fail(f"SIFT_LLM__PROVIDER={provider} needs the '{extra}' extra, which is not "
                    f"installed: uv pip install 'sift-knowledge-bot[{extra}]'.") from None


def _bedrock(llm: LLMSettings) -> Endpoint:
    import botocore.session
    from botocore.loaders import Loader

    session = botocore.session.get_session()
    region = llm.aws_region or session.get_config_variable("region") or ""
    if not region:
        raise _fail("SIFT_LLM__AWS_REGION is not set (nor AWS_REGION, nor a region in the AWS "
                    "profile): set it to the region where Bedrock serves your models, e.g. "
                    "us-east-1.")
    regions = {r for p in Loader().load_data("endpoints")["partitions"] for r in p["regions"]}
    if region not in regions:
        raise _fail(f"SIFT_LLM__AWS_REGION '{region}' is not an AWS region: use one where "
                    "Bedrock serves Claude, e.g. us-east-1 or eu-central-1.")
    bearer = os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
    if not bearer and session.get_credentials() is None:
        raise _fail("No AWS credentials for SIFT_LLM__PROVIDER=bedrock: set AWS_PROFILE, or "
                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with an IAM role.")
    for name, model in (("FAST_MODEL", llm.fast_model), ("ANSWER_MODEL", llm.answer_model)):
        if not _BEDROCK_MODEL.match(model):
            raise _fail(f"SIFT_LLM__{name} '{model}' is not a Bedrock model id: Bedrock names "
                        "Claude like anthropic.claude-… or, as an inference profile, "
                        "us.anthropic.claude-… (the Bedrock console's model catalog lists them).")
    return Endpoint("bedrock", region=region)


def _vertex(llm: LLMSettings) -> Endpoint:
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    region = llm.vertex_region or os.environ.get("CLOUD_ML_REGION", "")
    if not region:
        raise _fail("SIFT_LLM__VERTEX_REGION is not set: set it to a region where Vertex AI "
                    "serves Claude, e.g. us-east5, europe-west1 or global.")
    if not _VERTEX_REGION.match(region):
        raise _fail(f"SIFT_LLM__VERTEX_REGION '{region}' is not a Google Cloud region: use "
                    "one such as us-east5, europe-west1 or global.")
    try:
        _, found = google.auth.default(scopes=[_GOOGLE_SCOPE])  # reads files; no token yet
    except DefaultCredentialsError as exc:
        raise _fail("No Google credentials for SIFT_LLM__PROVIDER=vertex: run `gcloud auth "
                    "application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a "
                    "service account key file.") from exc
    project = llm.vertex_project or os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID", "") or \
        str(found or "")
    if not project:
        raise _fail("SIFT_LLM__VERTEX_PROJECT is not set and the Google credentials name no "
                    "project: set it to the project where Claude is enabled in Model Garden.")
    return Endpoint("vertex", region=region, project=project)


def _openai(llm: LLMSettings) -> Endpoint:
    if llm.azure_api_version and not (llm.base_url and llm.api_key):
        raise _fail("Azure OpenAI (SIFT_LLM__AZURE_API_VERSION is set) needs SIFT_LLM__BASE_URL "
                    "(the resource's endpoint) and SIFT_LLM__API_KEY.")
    if not llm.base_url and llm.api_key is None:
        raise _fail("SIFT_LLM__PROVIDER=openai needs SIFT_LLM__BASE_URL (your server, e.g. "
                    "http://localhost:8000/v1 for vLLM) or, for OpenAI itself, SIFT_LLM__API_KEY.")
    return Endpoint("openai", url=llm.base_url or "api.openai.com")


def resolve(settings: Settings) -> Endpoint | None:
    """The endpoint the settings name, or None for no LLM (fast mode); ConfigError naming
    the setting when the provider cannot work as set."""
    llm = settings.llm
    if llm.provider == "anthropic":
        return Endpoint("anthropic") if settings.anthropic_api_key is not None else None
    _need_extra(llm.provider)
    return {"bedrock": _bedrock, "vertex": _vertex, "openai": _openai}[llm.provider](llm)


def build(settings: Settings, endpoint: Endpoint, on_outcome: OutcomeSink | None = None) -> Any:
    """The adapter for `endpoint`: AnthropicLLM over one of the anthropic package's clients,
    or OpenAILLM."""
    from rag.llm import AnthropicLLM

    llm = settings.llm
    common: dict[str, Any] = dict(max_retries=llm.max_retries, timeout_s=llm.timeout_s,
                                  structured=llm.structured_output, on_outcome=on_outcome)
    if endpoint.provider == "anthropic":
        assert settings.anthropic_api_key is not None
        return AnthropicLLM(api_key=settings.anthropic_api_key.get_secret_value(),
                            base_url=llm.base_url or settings.anthropic_base_url, **common)
    if endpoint.provider == "openai":
        from rag.llm_openai import OpenAILLM

        key = llm.api_key.get_secret_value() if llm.api_key else ""
        return OpenAILLM(base_url=llm.base_url, api_key=key,
                         azure_api_version=llm.azure_api_version, **common)
    from rag.llm_clouds import bedrock_client, vertex_client

    client = bedrock_client(region=endpoint.region, base_url=llm.base_url,
                            timeout_s=llm.timeout_s) if endpoint.provider == "bedrock" else \
        vertex_client(project=endpoint.project, region=endpoint.region, base_url=llm.base_url,
                      timeout_s=llm.timeout_s)
    return AnthropicLLM(client=client, provider=endpoint.provider, **common)


async def verify_models(settings: Settings, llm: Any) -> None:
    """An OpenAI-compatible server lists what it serves: a model it does not is named now,
    not at the first question. A refused key is named too; a server not up yet is left to
    the circuit breaker and `sift llm check`."""
    from rag.errors import LLMError

    try:
        served = await llm.models()
    except LLMError as exc:
        if exc.kind == "auth":
            raise _fail(f"The server at SIFT_LLM__BASE_URL refused SIFT_LLM__API_KEY ({exc}).") \
                from exc
        return
    for name, model in (("FAST_MODEL", settings.llm.fast_model),
                        ("ANSWER_MODEL", settings.llm.answer_model)):
        if model not in served:
            shown = ", ".join(served[:8]) or "nothing"
            raise _fail(f"SIFT_LLM__{name} '{model}' is not served at SIFT_LLM__BASE_URL "
                        f"({settings.llm.base_url}); it serves: {shown}.")


def startup_line(settings: Settings, endpoint: Endpoint | None) -> str:
    """`sift serve`'s line for the model service."""
    if endpoint is None:
        return ("LLM: off, fast mode (quoted excerpts): set SIFT_ANTHROPIC_API_KEY, or "
                "SIFT_LLM__PROVIDER (docs/llm-providers.md)")
    llm = settings.llm
    return (f"LLM: {endpoint.describe()}; fast model {llm.fast_model} (understanding, "
            f"grading), answer model {llm.answer_model}")
