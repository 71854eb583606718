"""Claude through AsyncAnthropic, with one bounded retry loop that honours Retry-After."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rag.errors import LLMError
from rag.http_retry import retry_after
from rag.messages_post import MessagesPost
from rag.ports import LLMRequest, LLMResponse, TextSink
from rag.types import Usage

if TYPE_CHECKING:  # the SDK takes seconds to import: only runs with an API key need it
    import anthropic

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 8.0
# Some 429s can never succeed by waiting (an exhausted spend limit), whatever the status says.
_HOPELESS_CODES = {"enforced_spend_limit_reached", "contract_spend_limit_reached",
                   "linked_organization_spend_limit_reached", "organization_on_hold"}


def _retry_after(exc: anthropic.APIStatusError) -> float | None:
    headers = exc.response.headers
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    return retry_after(headers.get("retry-after"))


# An error event inside a stream arrives with the stream's HTTP 200: its type says what it is.
_STREAM_ERRORS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500,
                  "authentication_error": 401, "permission_error": 403}


def classify(exc: Exception) -> LLMError:
    """Map an SDK exception to an LLMError that says whether a retry makes sense."""
    import anthropic

    if isinstance(exc, LLMError):  # already said (e.g. a reply that is not a message)
        return exc
    if isinstance(exc, anthropic.APITimeoutError | TimeoutError):
        return LLMError(f"timed out: {exc or 'deadline passed'}", kind="timeout", retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return LLMError(f"connection failed: {exc}", kind="connection", retryable=True)
    if isinstance(exc, anthropic.APIStatusError):
        status, code = exc.status_code, getattr(exc, "error_code", None)
        if status == 200:
            status = _STREAM_ERRORS.get(str(getattr(exc, "type", "") or ""), 500)
        detail = f"HTTP {status} {getattr(exc, 'type', '') or ''}: " \
                 f"{getattr(exc, 'api_message', '') or exc}"
        if code in _HOPELESS_CODES:
            return LLMError(detail, kind="spend_limit", retryable=False)
        if status in (401, 403):
            return LLMError(detail, kind="auth", retryable=False)
        if status == 429:
            return LLMError(detail, kind="rate_limit", retryable=True)
        if status == 529:
            return LLMError(detail, kind="overloaded", retryable=True)
        if status >= 500 or status in (408, 409):
            return LLMError(detail, kind="server", retryable=True)
        return LLMError(detail, kind="bad_request", retryable=False)
    return LLMError(f"{type(exc).__name__}: {exc}", kind="unexpected", retryable=False)


def _usage(raw: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0),
        calls=1,
    )


def _from_json(reply: Any) -> LLMResponse:
    """A Messages API reply (its JSON body) as the port's response: the text blocks joined."""
    if not isinstance(reply, dict):
        raise LLMError(f"the reply was not a JSON object: {type(reply).__name__}",
                       kind="unexpected", retryable=False)
    text = "".join(str(b.get("text", "")) for b in reply.get("content") or ()
                   if isinstance(b, dict) and b.get("type") == "text")
    return LLMResponse(text=text, model=str(reply.get("model", "")),
                       usage=_usage(reply.get("usage") or {}),
                       stop_reason=str(reply.get("stop_reason") or ""))


def _from_message(message: Any) -> LLMResponse:
    """The SDK's final message of a stream, as the same response."""
    return _from_json(message.model_dump())


def tracing_configured() -> bool:
    """Whether a tracer provider is registered with OpenTelemetry. The SDK builds every
    call's span attributes even when no provider will keep them (about 5% of its CPU per
    call in `bench.llm_calls`; an answer makes 22 calls), so its spans are off unless one
    is registered (`None`: then the SDK's defaults and `ANTHROPIC_OPEN_TELEMETRY*` apply)."""
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


class AnthropicLLM:
    """The `LLM` port over the Messages API. SDK retries are off: this class owns the retries,
    so that a deadline bounds the whole call and hopeless errors are never retried."""

    def __init__(self, *, api_key: str, base_url: str = "", max_retries: int = 2,
                 timeout_s: float = 30.0) -> None:
        import anthropic

        # aiohttp's connection pool, not the SDK's default httpx one: with hundreds of grading
        # calls in flight, httpx checks every pooled connection on each request (measured
        # in bench.serve_load as the serve process's largest CPU cost).
        traced = tracing_configured()
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url or None, max_retries=0, timeout=timeout_s,
            http_client=anthropic.DefaultAioHttpClient(timeout=timeout_s),
            open_telemetry=None if traced else False,
        )
        # Non-streaming calls skip the SDK's request building unless its spans are recorded.
        self._post = None if traced else MessagesPost(self._client)
        self._max_retries = max_retries
        self._timeout_s = timeout_s

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
        system: dict[str, Any] = {"type": "text", "text": request.system}
        if request.cache_system:
            system["cache_control"] = {"type": "ephemeral"}
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "system": [system],
            "messages": [{"role": role, "content": text} for role, text in request.messages],
        }
        if request.json_schema is not None:
            body["output_config"] = {"format": {"type": "json_schema",
                                                "schema": dict(request.json_schema)}}
        return body

    async def complete(self, request: LLMRequest) -> LLMResponse:
        body = self._body(request)

        async def once(remaining: float) -> LLMResponse:
            # The reply's JSON as the Messages API documents it, read directly: building the
            # SDK's typed message from it was a sixth of each call's CPU, and grading makes 20
            # calls per answer. Errors are still the SDK's exceptions (raised before this).
            if self._post is not None:
                return _from_json(await self._post(body, remaining))
            raw = await self._client.messages.with_raw_response.create(**body,
                                                                       timeout=remaining)
            return _from_json(await raw.json())

        return await self._with_retries(request, once, lambda: False)

    async def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        """Like `complete`, handing each text delta to `on_text` as it arrives. Once text has
        gone out, a failure is not retried: a second attempt would repeat what was shown."""
        body = self._body(request)
        emitted = False

        async def once(remaining: float) -> Any:
            nonlocal emitted
            async with asyncio.timeout(remaining):  # the SDK's timeout is per read
                async with self._client.messages.stream(**body, timeout=remaining) as events:
                    async for text in events.text_stream:
                        emitted = True
                        await on_text(text)
                    return _from_message(await events.get_final_message())

        return await self._with_retries(request, once, lambda: emitted)

    async def _with_retries(self, request: LLMRequest,
                            once: Callable[[float], Awaitable[LLMResponse]],
                            committed: Callable[[], bool]) -> LLMResponse:
        """One bounded retry loop for every call: the deadline covers all attempts."""
        deadline = time.monotonic() + (request.timeout_s or self._timeout_s)
        attempt = 0
        while True:
            try:
                return await once(max(deadline - time.monotonic(), 0.1))
            except Exception as exc:  # the SDK's hierarchy is mapped in one place: classify()
                error = classify(exc)
                wait = self._backoff(exc, attempt)
                if not error.retryable or committed() or attempt >= self._max_retries or \
                        time.monotonic() + wait >= deadline:
                    log.warning("%s call to %s failed after %d attempt(s): %s",
                                request.purpose or "LLM", request.model, attempt + 1, error)
                    raise error from exc
                attempt += 1
                log.info("%s call: %s; retry %d in %.2fs", request.purpose or "LLM",
                         error.kind, attempt, wait)
                await asyncio.sleep(wait)

    @staticmethod
    def _backoff(exc: Exception, attempt: int) -> float:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            hinted = _retry_after(exc)
            if hinted is not None:
                return min(hinted, 60.0)
        return min(0.5 * 2**attempt, MAX_BACKOFF_S) * (1 - 0.25 * random.random())
