"""The Anthropic adapter against the fake Messages API: request shape, retries, errors."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from rag.errors import LLMError
from rag.ports import LLMRequest
from rag.types import QuestionImage
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    ModelLatency,
    Reply,
    error,
    overloaded,
    rate_limited,
)
from tests.fakes.fixtures import close_test_llms
from tests.rag.builders import make_llm

SCHEMA = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"],
          "additionalProperties": False}


def request(**overrides: object) -> LLMRequest:
    values: dict[str, object] = dict(model="claude-haiku-5-5", system="# Role: tester\nBe brief.",
                                     messages=(("user", "hello"),), max_tokens=50)
    values.update(overrides)
    return LLMRequest(**values)  # type: ignore[arg-type]


async def test_request_shape_structured_output_and_no_sampling(fake_anthropic: FakeAnthropic,
                                                               ) -> None:
    llm = make_llm(fake_anthropic.url)
    response = await llm.complete(request(json_schema=SCHEMA, cache_system=True))
    (sent,) = fake_anthropic.requests
    assert sent.headers["Authorization"] == "Bearer sk-test-key"
    assert sent.body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert sent.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert not {"temperature", "top_p", "top_k"} & sent.body.keys()
    assert response.text == "ok" and response.usage.calls == 1
    assert response.usage.cache_write_tokens > 0  # first use writes the cache
    again = await llm.complete(request(json_schema=SCHEMA, cache_system=True))
    assert again.usage.cache_read_tokens == response.usage.cache_write_tokens


async def test_a_reply_is_read_as_the_messages_api_documents_it(
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.append(Reply(200, {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "model": "claude-haiku-5-5",
        "content": [{"type": "thinking", "thinking": "Weigh the excerpt.", "signature": "sig"},
                    {"type": "text", "text": "Rotate them in the vault, "},
                    {"type": "text", "text": "then redeploy."}],
        "stop_reason": "max_tokens", "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 9, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 2048}}))
    response = await make_llm(fake_anthropic.url).complete(request())
    assert response.text == "Rotate them in the vault, then redeploy."  # text blocks only
    assert (response.model, response.stop_reason) == ("claude-haiku-5-5", "max_tokens")
    assert (response.usage.input_tokens, response.usage.output_tokens,
            response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (12, 9, 2048, 0)


async def test_a_reply_that_is_not_a_message_is_an_error(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.append(Reply(200, ["not", "a", "message"]))
    with pytest.raises(LLMError, match=r"^the reply was not a JSON object"):
        await make_llm(fake_anthropic.url).complete(request())


async def test_a_reply_that_is_not_json_is_named(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.append(Reply(200, page="<html>Sign in to the gateway</html>"))
    with pytest.raises(LLMError, match=r"^the reply was not JSON: b'<html>Sign in") as caught:
        await make_llm(fake_anthropic.url).complete(request())
    assert not caught.value.retryable


async def test_an_error_page_that_is_not_json_is_still_classified(
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.append(Reply(502, page="<html>Bad gateway</html>"))
    with pytest.raises(LLMError, match=r"^HTTP 502") as caught:
        await make_llm(fake_anthropic.url, max_retries=0).complete(request())
    assert (caught.value.kind, caught.value.retryable) == ("server", True)


# Headers the SDK computes per call (a retry count, the timeout, the body's length) or that
# the HTTP library adds; every other header it sends must be sent alike.
PER_CALL = {"content-length", "host", "accept-encoding", "connection", "x-stainless-retry-count",
            "x-stainless-read-timeout", "x-stainless-timeout"}


async def test_a_call_goes_out_as_the_sdk_would_send_it(fake_anthropic: FakeAnthropic) -> None:
    llm = make_llm(fake_anthropic.url)
    sent = request(json_schema=SCHEMA, cache_system=True)
    await llm.complete(sent)  # posted by Sift itself (no tracer provider here)
    await llm._client.messages.create(**llm._body(sent))  # the same call through the SDK
    direct, through_sdk = fake_anthropic.requests
    assert direct.body == through_sdk.body
    ours = {k.lower(): v for k, v in direct.headers.items()}
    theirs = {k.lower(): v for k, v in through_sdk.headers.items() if k.lower() not in PER_CALL}
    assert {"authorization", "anthropic-version", "content-type"} <= theirs.keys()
    assert {k: ours.get(k) for k in theirs} == theirs


async def test_a_proxy_named_in_the_environment_carries_the_call(
        fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake plays the proxy: the API's host does not resolve, so only a call sent through
    # the proxy can be answered.
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, fake_anthropic.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    response = await make_llm("http://api.anthropic.invalid", max_retries=0).complete(request())
    assert response.text == "ok"
    (sent,) = fake_anthropic.requests
    assert sent.headers["Host"] == "api.anthropic.invalid"


async def test_529_storm_is_retried_then_given_up(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.extend(overloaded() for _ in range(10))
    llm = make_llm(fake_anthropic.url, max_retries=2)
    with pytest.raises(LLMError) as caught:
        await llm.complete(request())
    assert caught.value.kind == "overloaded" and caught.value.retryable
    assert len(fake_anthropic.requests) == 3  # one try plus two bounded retries, no more


async def test_429_honours_retry_after(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.append(rate_limited(0.6))
    llm = make_llm(fake_anthropic.url)
    started = time.monotonic()
    response = await llm.complete(request())
    assert response.text == "ok"
    first, second = fake_anthropic.requests
    assert second.started - first.finished >= 0.55
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("status", "kind", "code"), [
    (401, "authentication_error", "auth"),
    (403, "permission_error", "auth"),
    (400, "invalid_request_error", "bad_request"),
])
async def test_hopeless_errors_are_not_retried(fake_anthropic: FakeAnthropic, status: int,
                                               kind: str, code: str) -> None:
    fake_anthropic.script.append(Reply(status, error(kind, "no")))
    with pytest.raises(LLMError) as caught:
        await make_llm(fake_anthropic.url).complete(request())
    assert caught.value.kind == code and not caught.value.retryable
    assert len(fake_anthropic.requests) == 1


@pytest.mark.parametrize("code", ["enforced_spend_limit_reached", "contract_spend_limit_reached",
                                  "linked_organization_spend_limit_reached"])
async def test_spend_limit_429_is_not_retried(fake_anthropic: FakeAnthropic, code: str) -> None:
    body = error("rate_limit_error", "spend limit reached")
    body["error"]["details"] = {"error_code": code}
    fake_anthropic.script.append(Reply(429, body, headers={"retry-after": "0"}))
    with pytest.raises(LLMError) as caught:
        await make_llm(fake_anthropic.url).complete(request())
    assert caught.value.kind == "spend_limit"
    assert len(fake_anthropic.requests) == 1


async def test_deadline_bounds_a_slow_call(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.append(Reply(200, raw="late", delay_s=3))
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        await make_llm(fake_anthropic.url).complete(request(timeout_s=0.5))
    assert caught.value.kind == "timeout"
    assert time.monotonic() - started < 2.5


async def test_unreachable_server_is_a_connection_error() -> None:
    from weaviate_server.process import free_port

    llm = make_llm(f"http://127.0.0.1:{free_port()}", max_retries=1, timeout_s=3)
    with pytest.raises(LLMError) as caught:
        await llm.complete(request())
    await close_test_llms()
    assert caught.value.kind == "connection"


# A process where OpenTelemetry has a recording tracer provider (as `opentelemetry-instrument`
# or an application's own set-up registers one before Sift starts).
TRACED_CALL = """
import asyncio, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from rag.llm import AnthropicLLM
from rag.ports import LLMRequest
from rag.types import QuestionImage

async def main():
    llm = AnthropicLLM(api_key="sk-test-key", base_url=sys.argv[1])
    await llm.complete(LLMRequest(model="claude-haiku-5-5", system="Be brief.",
                                  messages=(("user", "hello"),), max_tokens=50))
    await llm.close()

asyncio.run(main())
print(len(exporter.get_finished_spans()))
"""


async def test_sdk_spans_only_when_a_tracer_provider_records_them(
        fake_anthropic: FakeAnthropic) -> None:
    # Here no provider is registered: the client is made with its spans off (the SDK would
    # otherwise build each call's span attributes for nothing) and sends no trace context.
    llm = make_llm(fake_anthropic.url)
    assert llm._client.open_telemetry["traces"]["enabled"] is False
    await llm.complete(request())
    assert "traceparent" not in fake_anthropic.requests[-1].headers

    root = Path(__file__).resolve().parents[2]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", TRACED_CALL, fake_anthropic.url, cwd=root,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()[-2000:]
    assert out.decode().split() == ["1"]  # one span for the call
    assert "traceparent" in fake_anthropic.requests[-1].headers  # and its context sent along


async def collect_stream(llm: object, req: LLMRequest) -> tuple[list[str], object]:
    deltas: list[str] = []

    async def sink(text: str) -> None:
        deltas.append(text)

    response = await llm.stream(req, sink)  # type: ignore[attr-defined]
    return deltas, response


async def test_stream_hands_out_deltas_and_returns_the_whole_message(
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.append(Reply(200, raw="Rotate the key [1]. Then restart it [2]."))
    deltas, response = await collect_stream(make_llm(fake_anthropic.url), request())
    assert len(deltas) > 3 and "".join(deltas) == "Rotate the key [1]. Then restart it [2]."
    assert response.text == "".join(deltas)  # type: ignore[attr-defined]
    assert response.usage.output_tokens > 0  # type: ignore[attr-defined]
    assert fake_anthropic.requests[0].body["stream"] is True


async def test_stream_failing_before_any_text_is_retried(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.extend([overloaded(), Reply(200, raw="Fine now.")])
    deltas, _ = await collect_stream(make_llm(fake_anthropic.url), request())
    assert "".join(deltas) == "Fine now." and len(fake_anthropic.requests) == 2


async def test_stream_failing_after_text_is_not_retried(fake_anthropic: FakeAnthropic) -> None:
    # A second attempt would show the person the beginning of the answer twice.
    fake_anthropic.script.append(Reply(200, raw="One two three four five.", break_after=2))
    with pytest.raises(LLMError) as caught:
        await collect_stream(make_llm(fake_anthropic.url), request())
    assert caught.value.kind == "overloaded" and len(fake_anthropic.requests) == 1


async def test_stream_deadline_bounds_a_slow_stream(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.stream_delay_s = 0.3
    fake_anthropic.script.append(Reply(200, raw="a b c d e f g h i j"))
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        await collect_stream(make_llm(fake_anthropic.url), request(timeout_s=1.0))
    assert caught.value.kind == "timeout" and time.monotonic() - started < 2.5


def test_the_fakes_model_time_varies_by_reply_only_when_asked_to() -> None:
    steady = ModelLatency(0.5, 0.01)
    assert steady.draw() is steady  # no jitter: every reply takes the same time
    jittery = ModelLatency(0.5, 0.01, jitter=0.4)
    draws = [jittery.draw() for _ in range(200)]
    factors = [d.first_token_s / 0.5 for d in draws]
    assert all(0.6 <= f <= 1.4 for f in factors)
    assert min(factors) < 0.7 and max(factors) > 1.3  # spread over the whole range
    assert all(abs(d.per_output_token_s / 0.01 - f) < 1e-9  # both times, one factor
               for d, f in zip(draws, factors, strict=True))
    again = ModelLatency(0.5, 0.01, jitter=0.4)  # seeded: a run can be repeated
    assert [again.draw().first_token_s for _ in range(200)] == [d.first_token_s for d in draws]


async def test_the_fake_waits_each_replys_own_drawn_time(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.model_latency = ModelLatency(0.2, 0.0, jitter=0.9)
    same_draws = ModelLatency(0.2, 0.0, jitter=0.9)
    shortest = min(same_draws.draw().first_token_s for _ in range(6))
    llm = make_llm(fake_anthropic.url)
    for _ in range(6):
        await llm.complete(request())
    took = [r.finished - r.started for r in fake_anthropic.requests]
    # A sleep only ever runs long, so the shortest draw shows as a reply well under 0.2 s.
    assert shortest < 0.12 and min(took) < 0.18, took
    assert min(took) > shortest - 0.005


async def test_images_go_before_the_text_of_the_last_message_as_base64_blocks(
        fake_anthropic: FakeAnthropic) -> None:
    llm = make_llm(fake_anthropic.url)
    png = b"\x89PNG\r\n\x1a\n fake"
    await llm.complete(request(images=(QuestionImage("image/png", png, "a.png"),)))
    await llm.stream(request(images=(QuestionImage("image/webp", b"RIFF", "b.webp"),)),
                     lambda text: asyncio.sleep(0))
    first, _ = fake_anthropic.requests
    [block, text] = first.body["messages"][-1]["content"]
    assert block["type"] == "image" and block["source"]["type"] == "base64"
    assert text == {"type": "text", "text": "hello"}
    assert fake_anthropic.images == [("other", "image/png", png), ("other", "image/webp", b"RIFF")]
    # a media type the Messages API does not take is refused as it would refuse it
    with pytest.raises(LLMError):
        await llm.complete(request(images=(QuestionImage("image/bmp", b"BM", "c.bmp"),)))
