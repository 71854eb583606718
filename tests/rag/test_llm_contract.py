"""One contract for every LLM provider, run through the real SDK clients against each fake:
replies, structured output, streaming, every failure kind, retries and the circuit breaker."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rag.circuit import CircuitBreaker
from rag.errors import LLMError
from rag.ports import LLMRequest
from tests.fakes.anthropic_server import FAILURES, Reply, failing
from tests.fakes.llm_rigs import PROVIDERS, Rig, running

GRADE_SCHEMA = {"type": "object", "properties": {"score": {"type": "number"},
                                                 "reason": {"type": "string"}},
                "required": ["score", "reason"], "additionalProperties": False}
# (failure, kind, reason): what each named failure must be, whichever provider sent it.
EXPECTED = {"authentication": ("auth", "authentication"), "permission": ("auth", "permission"),
            "model_not_found": ("model_not_found", "model_not_found"),
            "rate_limit": ("rate_limit", "rate_limit"), "overloaded": ("overloaded", "overloaded"),
            "context_too_long": ("context_too_long", "context_too_long"),
            "server": ("server", "server")}
# Vendors whose rate-limit replies carry Retry-After (Bedrock and Vertex send none).
SENDS_RETRY_AFTER = {"anthropic", "openai"}


@pytest.fixture(params=PROVIDERS)
async def rig(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
              tmp_path: Path) -> AsyncIterator[Rig]:
    async with running(request.param, tmp_path) as found:
        for name, value in found.env.items():
            monkeypatch.setenv(name, value)
        yield found


def grade_request(rig: Rig, **overrides: object) -> LLMRequest:
    values: dict[str, object] = dict(
        model=rig.fast_model, system="# Role: relevance grader\nJudge the excerpt.",
        messages=(("user", "Question: how do I rotate keys?\n\n<document>\nRotate keys in "
                           "the vault.\n</document>"),),
        max_tokens=100, json_schema=GRADE_SCHEMA, purpose="grade")
    values.update(overrides)
    return LLMRequest(**values)  # type: ignore[arg-type]


async def test_a_structured_grade_comes_back_as_json(rig: Rig) -> None:
    llm = rig.llm()
    try:
        response = await llm.complete(grade_request(rig))
    finally:
        await llm.close()
    grade = json.loads(response.text)
    assert set(grade) == {"score", "reason"} and 0 <= grade["score"] <= 1
    assert response.model == rig.fast_model and response.usage.calls == 1
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    (sent,) = rig.fake.requests
    assert sent.kind == "grade" and sent.body["model"] == rig.fast_model


@pytest.mark.parametrize("mode", ["json_schema", "tool", "json_mode"])
async def test_each_structured_output_mode_is_sent_as_the_api_documents(rig: Rig,
                                                                       mode: str) -> None:
    llm = rig.llm(structured_output=mode)
    try:
        grade = json.loads((await llm.complete(grade_request(rig))).text)
    finally:
        await llm.close()
    assert set(grade) == {"score", "reason"}
    body = getattr(rig.fake, "raw", [None])[0] or rig.fake.requests[0].body
    system = json.dumps(body.get("system") or body["messages"][0])
    said_in_prompt = '\\"required\\": [\\"score\\", \\"reason\\"]' in system
    assert said_in_prompt == (mode == "json_mode")
    if rig.provider == "openai":
        expected = {"json_schema": "json_schema", "tool": None, "json_mode": "json_object"}
        assert (body.get("response_format") or {}).get("type") == expected[mode]
        assert ("tools" in body) == (mode == "tool")
    else:
        assert ("output_config" in body) == (mode == "json_schema")
        assert (body.get("tool_choice") or {}).get("type") == ("tool" if mode == "tool" else None)


async def test_a_stream_hands_out_deltas_and_counts_tokens(rig: Rig) -> None:
    rig.fake.script.append(Reply(200, raw="Rotate the key [1]. Then restart it [2]."))
    deltas: list[str] = []

    async def sink(text: str) -> None:
        deltas.append(text)

    llm = rig.llm()
    try:
        response = await llm.stream(grade_request(rig, json_schema=None, purpose="answer",
                                                  model=rig.answer_model), sink)
    finally:
        await llm.close()
    assert len(deltas) > 3 and "".join(deltas) == "Rotate the key [1]. Then restart it [2]."
    assert response.text == "".join(deltas) and response.model == rig.answer_model
    assert response.usage.output_tokens > 0 and response.usage.input_tokens > 0


@pytest.mark.parametrize("failure", FAILURES)
async def test_every_failure_is_named_alike(rig: Rig, failure: str) -> None:
    rig.fake.script.extend(failing(failure) for _ in range(3))
    llm = rig.llm(max_retries=2)
    try:
        with pytest.raises(LLMError) as caught:
            await llm.complete(grade_request(rig))
    finally:
        await llm.close()
    kind, reason = EXPECTED[failure]
    assert (caught.value.kind, caught.value.reason) == (kind, reason), str(caught.value)
    assert "sk-wrong" not in str(caught.value)  # a key echoed by the API stays out of logs
    retried = failure in ("rate_limit", "overloaded", "server")
    assert caught.value.retryable is retried
    assert len(rig.fake.requests) == (3 if retried else 1)


async def test_a_rate_limit_is_waited_out(rig: Rig) -> None:
    rig.fake.script.append(failing("rate_limit", retry_after_s=0.6))
    llm = rig.llm()
    try:
        response = await llm.complete(grade_request(rig))
    finally:
        await llm.close()
    assert json.loads(response.text)["reason"]
    first, second = rig.fake.requests
    waited = second.started - first.finished
    if rig.provider in SENDS_RETRY_AFTER:
        assert waited >= 0.55  # the vendor's Retry-After, honoured
    else:
        assert 0.3 <= waited < 0.55  # no hint: the loop's own first backoff (0.375-0.5 s)


async def test_a_slow_call_is_a_timeout(rig: Rig) -> None:
    rig.fake.script.append(Reply(200, raw="late", delay_s=3, kind="grade"))
    llm = rig.llm(max_retries=0)
    started = time.monotonic()
    try:
        with pytest.raises(LLMError) as caught:
            await llm.complete(grade_request(rig, timeout_s=0.5))
    finally:
        await llm.close()
    assert caught.value.kind == "timeout" and time.monotonic() - started < 2.5


async def test_a_reply_that_is_not_json_is_malformed(rig: Rig) -> None:
    rig.fake.script.append(Reply(200, page="<html>Sign in to the gateway</html>"))
    llm = rig.llm()
    try:
        with pytest.raises(LLMError) as caught:
            await llm.complete(grade_request(rig))
    finally:
        await llm.close()
    assert caught.value.kind == "malformed" and not caught.value.retryable
    assert len(rig.fake.requests) == 1


async def test_a_stream_broken_after_text_is_not_retried(rig: Rig) -> None:
    rig.fake.script.append(Reply(200, raw="One two three four five.", break_after=2))

    async def sink(text: str) -> None:
        pass

    llm = rig.llm()
    try:
        with pytest.raises(LLMError) as caught:
            await llm.stream(grade_request(rig, json_schema=None), sink)
    finally:
        await llm.close()
    assert caught.value.kind == "overloaded" and len(rig.fake.requests) == 1


async def test_a_refused_identity_opens_the_circuit(rig: Rig) -> None:
    rig.fake.script.append(failing("authentication"))
    llm = rig.llm()
    circuit = CircuitBreaker(llm, cooldown_s=60)
    try:
        with pytest.raises(LLMError):
            await circuit.complete(grade_request(rig))
        with pytest.raises(LLMError) as caught:
            await circuit.complete(grade_request(rig))
    finally:
        await llm.close()
    assert caught.value.kind == "circuit_open" and len(rig.fake.requests) == 1
    assert not circuit.allows_calls()


async def test_prompt_caching_where_the_platform_has_it(rig: Rig) -> None:
    llm = rig.llm()
    try:
        first = await llm.complete(grade_request(rig, cache_system=True))
        second = await llm.complete(grade_request(rig, cache_system=True))
    finally:
        await llm.close()
    if rig.provider == "openai":  # caching is the server's own affair: nothing to mark
        assert "cache_control" not in json.dumps(rig.fake.raw)
        assert second.usage.cache_write_tokens == 0
        return
    assert rig.fake.requests[0].body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert first.usage.cache_write_tokens > 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens


async def test_azure_openai_goes_to_the_deployment_with_its_api_key(tmp_path: Path) -> None:
    """AsyncAzureOpenAI: /openai/deployments/<model>/chat/completions?api-version=…, the key in
    the api-key header (not a bearer token)."""
    from rag.llm_openai import OpenAILLM
    from tests.fakes.openai_server import FakeOpenAI

    fake = FakeOpenAI(api_key="azure-key")
    await fake.start()
    llm = OpenAILLM(base_url=fake.url, api_key="azure-key", azure_api_version="2024-10-21",
                    max_retries=0)
    try:
        response = await llm.complete(LLMRequest(
            model="gpt-4o-mini-deploy", system="# Role: relevance grader\nJudge.",
            messages=(("user", "Question: q\n\n<document>\nx\n</document>"),), max_tokens=50,
            json_schema=GRADE_SCHEMA))
        wrong = OpenAILLM(base_url=fake.url, api_key="not-it", azure_api_version="2024-10-21",
                          max_retries=0)
        with pytest.raises(LLMError) as caught:
            await wrong.complete(grade_request(Rig("openai", fake)))
        await wrong.close()
    finally:
        await llm.close()
        await fake.stop()
    assert set(json.loads(response.text)) == {"score", "reason"}
    assert response.model == "gpt-4o-mini-deploy"
    (sent,) = fake.requests
    assert sent.headers["api-key"] == "azure-key" and "Authorization" not in sent.headers
    assert (caught.value.kind, caught.value.reason) == ("auth", "authentication")
