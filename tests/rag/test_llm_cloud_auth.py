"""The clouds' own authentication, attacked: a request signed with the wrong secret, a stale
signature, a token from another key. Each fake refuses it as its cloud does, and Sift names
the failure `auth` (which opens the circuit) through the SDK client."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from rag.errors import LLMError
from rag.llm import AnthropicLLM
from rag.ports import LLMRequest
from tests.fakes import bedrock_server
from tests.fakes.bedrock_server import FakeBedrock
from tests.fakes.llm_rigs import MODELS, NO_METADATA
from tests.fakes.vertex_server import FakeVertex

REQUEST = LLMRequest(model=MODELS["bedrock"][0], system="# Role: tester\nBe brief.",
                     messages=(("user", "hello"),), max_tokens=20)


@pytest.fixture
async def bedrock(monkeypatch: pytest.MonkeyPatch) -> FakeBedrock:
    for name, value in NO_METADATA.items():
        monkeypatch.setenv(name, value)
    fake = FakeBedrock()
    await fake.start()
    yield fake  # type: ignore[misc]
    await fake.stop()


def bedrock_llm(fake: FakeBedrock, secret: str) -> AnthropicLLM:
    from anthropic import AsyncAnthropicBedrock

    client = AsyncAnthropicBedrock(aws_access_key=bedrock_server.ACCESS_KEY,
                                   aws_secret_key=secret, aws_region=bedrock_server.REGION,
                                   base_url=fake.url, max_retries=0)
    return AnthropicLLM(client=client, provider="bedrock", max_retries=0)


async def test_bedrock_accepts_the_right_signature(bedrock: FakeBedrock) -> None:
    llm = bedrock_llm(bedrock, bedrock_server.SECRET_KEY)
    try:
        assert (await llm.complete(REQUEST)).text == "ok"
    finally:
        await llm.close()
    assert bedrock.signature_failures == []
    auth = bedrock.requests[0].headers["Authorization"]
    assert auth.startswith(f"AWS4-HMAC-SHA256 Credential={bedrock_server.ACCESS_KEY}/")
    assert "/us-east-1/bedrock/aws4_request, SignedHeaders=" in auth


async def test_bedrock_refuses_a_request_signed_with_the_wrong_secret(
        bedrock: FakeBedrock) -> None:
    llm = bedrock_llm(bedrock, "not-the-secret")
    try:
        with pytest.raises(LLMError) as caught:
            await llm.complete(REQUEST)
    finally:
        await llm.close()
    assert (caught.value.kind, caught.value.reason) == ("auth", "authentication")
    assert bedrock.signature_failures == [
        "The request signature we calculated does not match the signature you provided."]
    assert bedrock.requests == []  # refused before any model saw it


@pytest.mark.parametrize(("headers", "why"), [
    ({}, "Authorization is not a SigV4 header"),
    ({"Authorization": "AWS4-HMAC-SHA256 Credential=AKIAOTHER/20261201/us-east-1/bedrock/"
                       "aws4_request, SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
      "X-Amz-Date": "20261201T000000Z"}, "The access key AKIAOTHER is unknown"),
    ({"Authorization": f"AWS4-HMAC-SHA256 Credential={bedrock_server.ACCESS_KEY}/20200101/"
                       "us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, "
                       "Signature=" + "0" * 64, "X-Amz-Date": "20200101T000000Z"},
     "Signature expired"),
])
async def test_bedrock_refuses_unsigned_foreign_and_stale_requests(
        bedrock: FakeBedrock, headers: dict[str, str], why: str) -> None:
    body = json.dumps({"anthropic_version": bedrock_server.VERSION, "max_tokens": 5,
                       "messages": [{"role": "user", "content": "hi"}]})
    async with aiohttp.ClientSession() as session, session.post(
            f"{bedrock.url}/model/{MODELS['bedrock'][0]}/invoke", data=body,
            headers=headers) as response:
        assert response.status == 403
        assert response.headers["x-amzn-ErrorType"].split(":")[0] in (
            "InvalidSignatureException", "UnrecognizedClientException")
    assert bedrock.signature_failures[0].startswith(why) and bedrock.requests == []


async def test_vertex_refuses_a_token_it_did_not_issue_and_a_foreign_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from anthropic import AsyncAnthropicVertex

    fake, other = FakeVertex(), FakeVertex()
    await fake.start()
    await other.start()
    try:
        client = AsyncAnthropicVertex(region="us-east5", project_id="sift-fake-project",
                                      access_token="ya29.made-up", base_url=f"{fake.url}/v1")
        llm = AnthropicLLM(client=client, provider="vertex", max_retries=0)
        with pytest.raises(LLMError) as caught:
            await llm.complete(REQUEST)
        await llm.close()
        assert (caught.value.kind, caught.value.reason) == ("auth", "authentication")
        # A key file made by another project's fake, pointed at this token endpoint.
        foreign = json.loads(other.credentials_file(tmp_path).read_text())
        foreign["token_uri"] = f"{fake.url}/token"
        (tmp_path / "foreign.json").write_text(json.dumps(foreign))
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "foreign.json"))
        for name, value in NO_METADATA.items():
            monkeypatch.setenv(name, value)
        client = AsyncAnthropicVertex(region="us-east5", project_id="sift-fake-project",
                                      base_url=f"{fake.url}/v1")
        llm = AnthropicLLM(client=client, provider="vertex", max_retries=0)
        with pytest.raises(LLMError) as caught:
            await llm.complete(REQUEST)
        await llm.close()
        assert (caught.value.kind, caught.value.reason) == ("auth", "authentication")
        assert "invalid_grant" in str(caught.value) and fake.tokens == set()
    finally:
        await fake.stop()
        await other.stop()
