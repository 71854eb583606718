"""The anthropic package's Bedrock and Vertex AI clients, on the clouds' own credential chains."""

from __future__ import annotations

from typing import Any

from rag.llm import tracing_configured


def bedrock_client(*, region: str, base_url: str, timeout_s: float) -> Any:
    """AsyncAnthropicBedrock: requests signed with SigV4 from botocore's standard chain
    (environment, profile, SSO, container or instance role); `base_url` replaces
    bedrock-runtime.<region>.amazonaws.com (a VPC endpoint, or a test's fake)."""
    from anthropic import AsyncAnthropicBedrock, DefaultAioHttpClient

    return AsyncAnthropicBedrock(
        aws_region=region or None, base_url=base_url or None, max_retries=0, timeout=timeout_s,
        http_client=DefaultAioHttpClient(timeout=timeout_s),
        open_telemetry=None if tracing_configured() else False)


def vertex_client(*, project: str, region: str, base_url: str, timeout_s: float) -> Any:
    """AsyncAnthropicVertex: a bearer token from google-auth's application-default
    credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's login, the metadata server),
    refreshed by the SDK as it expires."""
    from anthropic import NOT_GIVEN, AsyncAnthropicVertex, DefaultAioHttpClient

    return AsyncAnthropicVertex(  # no project: the SDK's env, then the credentials' project
        region=region, project_id=project or NOT_GIVEN, base_url=base_url or None,
        max_retries=0, timeout=timeout_s,
        http_client=DefaultAioHttpClient(timeout=timeout_s),
        open_telemetry=None if tracing_configured() else False)
