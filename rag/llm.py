"""Claude through the anthropic package's async clients: the direct API, Bedrock or Vertex AI."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from rag import llm_errors
from rag.errors import LLMError
from rag.llm_retry import OutcomeSink, RetryLoop
from rag.messages_post import MessagesPost
from rag.ports import LLMRequest, LLMResponse, TextSink
from rag.types import QuestionImage, Usage

if TYPE_CHECKING:  # the SDK takes seconds to import: only runs with an API key need it
    import anthropic

log = logging.getLogger(__name__)

# How a JSON schema reaches the model: the API's structured outputs, a forced tool call whose
# input is the reply, or the schema in the prompt (JSON mode where the API has one).
StructuredOutput = Literal["json_schema", "tool", "json_mode"]
REPLY_TOOL = "reply"
# The anthropic_version each cloud's Claude documents as the one value its body must carry.
PLATFORM_VERSIONS = {"bedrock": "bedrock-2023-05-31", "vertex": "vertex-2023-10-16"}


def classify(exc: Exception) -> LLMError:
    """Map an anthropic SDK exception (from any of its clients) to an LLMError."""
    import anthropic

    if isinstance(exc, LLMError):  # already said (e.g. a reply that is not a message)
        return exc
    if isinstance(exc, anthropic.APITimeoutError | TimeoutError):
        return llm_errors.timed_out(exc)
    if isinstance(exc, anthropic.APIConnectionError):
        return llm_errors.unreachable(exc)
    if isinstance(exc, anthropic.APIStatusError):
        headers = exc.response.headers
        kind, code, message = llm_errors.error_fields(exc.body)
        # Bedrock names the error in a header (restJson1), e.g. "ThrottlingException:http://…".
        kind = kind or headers.get("x-amzn-errortype", "").split(":")[0]
        return llm_errors.from_failure(llm_errors.Failure(
            exc.status_code, kind, message or str(exc), code, llm_errors.hinted_wait(headers)))
    if type(exc).__module__.startswith(("google.auth", "botocore")):  # no token, no keys
        return LLMError(f"the cloud's credentials failed: {type(exc).__name__}: {exc}",
                        kind="auth", retryable=False, reason="authentication")
    return LLMError(f"{type(exc).__name__}: {exc}", kind="unexpected", retryable=False)


def _usage(raw: Mapping[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0),
        calls=1,
    )


def from_json(reply: Any) -> LLMResponse:
    """A Messages API reply (its JSON body) as the port's response: the text blocks joined, or
    the forced reply tool's input as JSON."""
    if not isinstance(reply, dict):
        raise llm_errors.malformed(f"the reply was not a JSON object: {type(reply).__name__}")
    blocks = [b for b in reply.get("content") or () if isinstance(b, dict)]
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    tool = next((b for b in blocks if b.get("type") == "tool_use"), None)
    if tool is not None:
        text = json.dumps(tool.get("input"))
    return LLMResponse(text=text, model=str(reply.get("model", "")),
                       usage=_usage(reply.get("usage") or {}),
                       stop_reason=str(reply.get("stop_reason") or ""))


def image_block(image: QuestionImage) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type,
                                        "data": base64.b64encode(image.data).decode()}}


def tracing_configured() -> bool:
    """Whether a tracer provider is registered with OpenTelemetry. The SDK builds every
    call's span attributes even when no provider will keep them (about 5% of its CPU per
    call in `bench.llm_calls`; an answer makes 22 calls), so its spans are off unless one
    is registered (`None`: then the SDK's defaults and `ANTHROPIC_OPEN_TELEMETRY*` apply)."""
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def direct_client(api_key: str, base_url: str, timeout_s: float) -> anthropic.AsyncAnthropic:
    import anthropic

    # aiohttp's connection pool, not the SDK's default httpx one: with hundreds of grading
    # calls in flight, httpx checks every pooled connection on each request (measured
    # in bench.serve_load as the serve process's largest CPU cost).
    return anthropic.AsyncAnthropic(
        api_key=api_key, base_url=base_url or None, max_retries=0, timeout=timeout_s,
        http_client=anthropic.DefaultAioHttpClient(timeout=timeout_s),
        open_telemetry=None if tracing_configured() else False)


class AnthropicLLM:
    """The `LLM` port over the Messages API. SDK retries are off: `RetryLoop` owns them, so
    that a deadline bounds the whole call and hopeless errors are never retried. `client` is
    one of the package's clients (AsyncAnthropicBedrock, AsyncAnthropicVertex: rag/llm_clouds.py);
    without one, the direct API with `api_key`."""

    def __init__(self, *, api_key: str = "", base_url: str = "", max_retries: int = 2,
                 timeout_s: float = 30.0, client: Any = None, provider: str = "anthropic",
                 structured: StructuredOutput = "json_schema",
                 on_outcome: OutcomeSink | None = None) -> None:
        self._client = client if client is not None else \
            direct_client(api_key, base_url, timeout_s)
        # Non-streaming calls to the direct API skip the SDK's request building unless its
        # spans are recorded; the clouds sign (Bedrock) or mint tokens (Vertex) per request.
        direct = client is None and not tracing_configured()
        self._post = MessagesPost(self._client) if direct else None
        self._structured = structured
        self.provider = provider
        version = PLATFORM_VERSIONS.get(provider)
        self._extra: dict[str, Any] = {"extra_body": {"anthropic_version": version}} \
            if version else {}
        self.retries = RetryLoop(provider, max_retries=max_retries, timeout_s=timeout_s,
                                 classify=classify, on_outcome=on_outcome)

    async def close(self) -> None:
        if self._post is not None:
            await self._post.close()
        await self._client.close()

    @property
    def http_client_class(self) -> type:
        """The HTTP client class the SDK sends requests with (its logging is that stack's)."""
        import anthropic

        return anthropic.DefaultAioHttpClient

    def _body(self, request: LLMRequest) -> dict[str, Any]:
        text = request.system
        schema = dict(request.json_schema) if request.json_schema is not None else None
        if schema is not None and self._structured == "json_mode":
            text += "\n\nReply with one JSON object that follows this JSON schema, and " \
                    f"nothing else:\n{json.dumps(schema)}"
        system: dict[str, Any] = {"type": "text", "text": text}
        if request.cache_system:
            system["cache_control"] = {"type": "ephemeral"}
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "system": [system],
            "messages": [{"role": role, "content": text} for role, text in request.messages],
        }
        if request.images:  # the Messages API's image blocks go before the text they explain
            last = body["messages"][-1]
            last["content"] = [*map(image_block, request.images),
                               {"type": "text", "text": last["content"]}]
        if schema is not None and self._structured == "json_schema":
            body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        elif schema is not None and self._structured == "tool":
            body["tools"] = [{"name": REPLY_TOOL, "description": "Give the reply.",
                              "input_schema": schema}]
            body["tool_choice"] = {"type": "tool", "name": REPLY_TOOL}
        return body

    async def complete(self, request: LLMRequest) -> LLMResponse:
        body = self._body(request)

        async def once(remaining: float) -> LLMResponse:
            # The reply's JSON as the Messages API documents it, read directly: building the
            # SDK's typed message from it was a sixth of each call's CPU, and grading makes 20
            # calls per answer.
            if self._post is not None:
                return from_json(await self._post(body, remaining))
            raw = await self._client.messages.with_raw_response.create(
                **body, **self._extra, timeout=remaining)
            try:
                reply = await raw.json()
            except ValueError as exc:  # a gateway's sign-in page, say
                text = (await raw.read())[:80]
                raise llm_errors.malformed(f"the reply was not JSON: {text!r}") from exc
            return from_json(reply)

        return await self.retries.run(request, once)

    async def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        """Like `complete`, handing each text delta to `on_text` as it arrives. Once text has
        gone out, a failure is not retried: a second attempt would repeat what was shown."""
        body = self._body(request)
        emitted = False

        async def once(remaining: float) -> LLMResponse:
            nonlocal emitted
            async with asyncio.timeout(remaining):  # the SDK's timeout is per read
                async with self._client.messages.stream(**body, **self._extra,
                                                        timeout=remaining) as events:
                    async for text in events.text_stream:
                        emitted = True
                        await on_text(text)
                    return from_json((await events.get_final_message()).model_dump())

        return await self.retries.run(request, once, lambda: emitted)
