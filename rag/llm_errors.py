"""Every provider's failures as the same few LLMError kinds, so retries and the breaker agree."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from rag.errors import LLMError
from rag.http_retry import retry_after

# The kinds retries, the circuit breaker and the pipeline read, with whether waiting helps.
RETRYABLE_KINDS = frozenset({"timeout", "connection", "rate_limit", "overloaded", "server"})
# Some 429s can never succeed by waiting (an exhausted spend limit), whatever the status says.
HOPELESS_CODES = frozenset({"enforced_spend_limit_reached", "contract_spend_limit_reached",
                            "linked_organization_spend_limit_reached", "organization_on_hold"})
# An error inside a stream arrives with the stream's HTTP 200: its type says what it was.
# Anthropic's event types, Bedrock's event-stream exceptions, Vertex's and OpenAI's codes.
STREAM_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500,
                 "authentication_error": 401, "permission_error": 403,
                 "not_found_error": 404, "invalid_request_error": 400,
                 "throttlingexception": 429, "serviceunavailableexception": 503,
                 "modeltimeoutexception": 408, "internalserverexception": 500,
                 "modelstreamerrorexception": 424, "validationexception": 400}
# Words a provider uses when the prompt does not fit the model's context window: Anthropic
# ("prompt is too long"), Bedrock ("Input is too long"), OpenAI and vLLM ("maximum context
# length", context_length_exceeded), Ollama and llama.cpp ("context window", "context size").
_TOO_LONG = re.compile(r"prompt is too long|input is too long|too many input tokens|"
                       r"maximum context length|context_length_exceeded|context window|"
                       r"context size|exceeds the context", re.I)
# A refused identity rather than a missing permission, on clouds that answer both with 403.
_BAD_IDENTITY = re.compile(r"unrecognizedclient|invalidsignature|expiredtoken|"
                           r"security token|signature we calculated|unauthenticated", re.I)
# A key some APIs echo back, masked or not, in the error text that reaches the log.
_KEY = re.compile(r"\b(sk|xai|gsk)-[A-Za-z0-9_*.-]{4,}")
_BAD_MODEL = re.compile(r"model identifier is invalid|model.{0,40}(not found|does not exist)|"
                        r"unknown model|no such model", re.I)


@dataclass(frozen=True)
class Failure:
    """One failed call as the provider described it (status, its error type, code, text)."""

    status: int
    error_type: str = ""
    message: str = ""
    code: str = ""
    retry_after_s: float | None = None


def hinted_wait(headers: Mapping[str, str]) -> float | None:
    """The provider's own wait: retry-after-ms (Anthropic, OpenAI) or Retry-After."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    return retry_after(headers.get("retry-after"))


def _kind(f: Failure, status: int) -> tuple[str, str]:
    """(kind, reason) for a failure whose status is known."""
    words = f"{f.error_type} {f.code} {f.message}"
    if f.code in HOPELESS_CODES:
        return "spend_limit", "spend_limit"
    if status == 401 or (status == 403 and _BAD_IDENTITY.search(words)):
        return "auth", "authentication"
    if status == 403:
        return "auth", "permission"
    if status == 429:
        return "rate_limit", "rate_limit"
    if status in (529, 503) or "overloaded" in f.error_type.lower():
        return "overloaded", "overloaded"
    if status in (408, 504):
        return "timeout", "timeout"
    if status >= 500 or status in (409, 424):
        return "server", "server"
    if status == 404 or _BAD_MODEL.search(words):
        return "model_not_found", "model_not_found"
    if _TOO_LONG.search(words):
        return "context_too_long", "context_too_long"
    return "bad_request", "bad_request"


def from_failure(f: Failure) -> LLMError:
    """The LLMError for an HTTP failure (status 200: an error event inside a stream)."""
    status = f.status
    if status == 200:
        status = STREAM_STATUS.get(f.error_type.lower(), 500)
    kind, reason = _kind(f, status)
    said = _KEY.sub(r"\1-…", f.message or "no message")
    detail = f"HTTP {status} {f.error_type}: {said}".replace("  ", " ")
    return LLMError(detail, kind=kind, retryable=kind in RETRYABLE_KINDS, reason=reason,
                    retry_after_s=f.retry_after_s if kind in RETRYABLE_KINDS else None)


def timed_out(cause: object) -> LLMError:
    return LLMError(f"timed out: {cause or 'deadline passed'}", kind="timeout", retryable=True)


def unreachable(cause: object) -> LLMError:
    return LLMError(f"connection failed: {cause}", kind="connection", retryable=True)


def malformed(cause: str) -> LLMError:
    """A reply that arrived but cannot be read as one (not JSON, not a message)."""
    return LLMError(cause, kind="malformed", retryable=False)


def error_fields(body: object) -> tuple[str, str, str]:
    """(type, code, message) from an error body in any provider's documented shape:
    Anthropic {"error": {"type", "message"}}, OpenAI {"error": {"type", "code", "message"}},
    Google {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message"}}, Bedrock
    {"message"} (its type is the x-amzn-ErrorType header), or a bare error object."""
    if not isinstance(body, dict):
        return "", "", str(body or "")[:300]
    inner = body.get("error", body)
    if not isinstance(inner, dict):
        return "", "", str(inner)[:300]
    kind = inner.get("type") or inner.get("status") or body.get("__type") or ""
    details = inner.get("details")
    code = details.get("error_code") if isinstance(details, dict) else inner.get("code")
    message = inner.get("message") or body.get("message") or body.get("Message") or ""
    return str(kind), "" if code is None else str(code), str(message)
