"""/mcp through `sift serve`, driven by the `mcp` package's own client over streamable HTTP:
the tools a model sees, each called (structured content and readable text), bad input, and
the authorization the MCP spec names (401, WWW-Authenticate, protected resource metadata,
OAuth access tokens from the console's provider for this resource, and the SDK's own OAuth
client signing in through them)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from jsonschema import Draft202012Validator
from mcp.client.auth.oauth2 import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from bot.app import App
from rag.embed import LocalEmbedder
from storage.models import Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.oidc_server import FakeOidc
from tests.permissions.tool_client import api, mcp_session, text_of
from tests.scenarios.stack import ServedSift, serving, settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

ADA = "ada@example.com"
QUESTION = "How do I rotate the staging database credentials?"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "probe", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
async def oidc() -> AsyncIterator[FakeOidc]:
    async with FakeOidc("sift-console", "console-secret-5b1e") as server:
        assert isinstance(server, FakeOidc)
        yield server


@pytest.fixture
async def sift(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,
               embedder: LocalEmbedder, fake_anthropic: FakeAnthropic, oidc: FakeOidc
               ) -> AsyncIterator[ServedSift]:
    settings = settings_for(tmp_path, weaviate_server, corpus, fake_anthropic, sources=[],
                            admin={"oidc": {"issuer": oidc.url, "client_id": "sift-console",
                                            "client_secret": "console-secret-5b1e",
                                            "viewer_domains": ["example.com"]}})
    async with serving(settings, embedder) as served:
        yield served


async def test_the_tools_a_model_sees(sift: ServedSift) -> None:
    async with mcp_session(sift, sift.app.tokens.create(ADA, expires_in=None).secret) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert set(tools) == {"search", "ask", "get_document"}
    for tool in tools.values():
        assert tool.description and len(tool.description) > 120  # enough for a model to choose
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.output_schema is not None
    search = tools["search"].input_schema
    assert search["required"] == ["query"]
    assert (search["properties"]["limit"]["minimum"], search["properties"]["limit"]["maximum"]
            ) == (1, 50)
    assert tools["ask"].input_schema["required"] == ["question"]
    answered = tools["ask"].output_schema
    assert answered is not None
    assert set(answered["properties"]) >= {"status", "text", "citations"}
    assert tools["get_document"].input_schema["required"] == ["id"]


async def test_each_tool_gives_structured_content_and_readable_text(sift: ServedSift) -> None:
    async with mcp_session(sift, sift.app.tokens.create(ADA, expires_in=None).secret) as s:
        found = await s.call_tool("search", {"query": "WireGuard VPN profile", "limit": 2})
        asked = await s.call_tool("ask", {"question": QUESTION, "mode": "fast"})
        read = await s.call_tool("get_document", {"id": "vpn"})
        missing = await s.call_tool("get_document", {"id": "no-such-document"})
    assert not found.is_error and found.structured_content is not None
    top = found.structured_content["passages"][0]
    assert top["doc_id"] == "vpn" and len(found.structured_content["passages"]) <= 2
    assert text_of(found).startswith("1. Setting up the VPN") and "doc_id: vpn" in text_of(found)
    assert not asked.is_error and asked.structured_content is not None
    assert asked.structured_content["status"] == "answered"
    assert asked.structured_content["mode"] == "fast"
    assert "Sources:\n[1] " in text_of(asked)
    assert asked.structured_content["text"] in text_of(asked)
    assert not read.is_error and read.structured_content is not None
    assert "Install WireGuard" in read.structured_content["text"]
    assert text_of(read).startswith("# Setting up the VPN")
    assert missing.is_error and "There is no document no-such-document" in text_of(missing)
    [interaction] = sift.rows(Interaction)  # the question, recorded like any other
    assert (interaction.platform, interaction.user_id) == ("mcp", ADA)


@pytest.mark.parametrize(("tool", "arguments"), [
    ("search", {"query": ""}), ("search", {"query": "vpn", "limit": 500}),
    ("ask", {"question": "x", "mode": "slow"}), ("get_document", {}),
])
async def test_bad_arguments_are_refused_before_anything_runs(
        sift: ServedSift, tool: str, arguments: dict[str, object]) -> None:
    async with mcp_session(sift, sift.app.tokens.create(ADA, expires_in=None).secret) as s:
        result = await s.call_tool(tool, arguments)
    assert result.is_error
    assert sift.rows(Interaction) == []


async def test_no_token_is_a_401_naming_the_resource_metadata(sift: ServedSift,
                                                             oidc: FakeOidc) -> None:
    where = f"{sift.base_url}/.well-known/oauth-protected-resource/mcp"
    for headers in ({}, {"Authorization": "Bearer sift_pat_forged"},
                    {"Authorization": "Basic YWRhOnB3"}):
        reply = await api(sift, "POST", "/mcp", json_body=INITIALIZE, headers={
            **ACCEPT, **headers})
        assert reply.status == 401, headers
        assert f'resource_metadata="{where}"' in reply.headers["WWW-Authenticate"]
        assert reply.headers["WWW-Authenticate"].startswith("Bearer ")
    for path in ("/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-protected-resource"):
        described = await api(sift, "GET", path)
        assert described.status == 200
        assert described.body["resource"] == f"{sift.base_url}/mcp"
        assert described.body["authorization_servers"] == [oidc.url]
        assert described.body["bearer_methods_supported"] == ["header"]
    token = sift.app.tokens.create(ADA, expires_in=None).secret
    stream = await api(sift, "GET", "/mcp", token, headers={"Accept": "text/event-stream"})
    assert (stream.status, stream.headers["Allow"]) == (405, "POST")  # no server stream
    good = await api(sift, "POST", "/mcp", json_body=INITIALIZE, headers={
        **ACCEPT, "Authorization": f"Bearer {sift.app.tokens.create(ADA, expires_in=None).secret}"})
    assert good.status == 200 and json.dumps(good.body).count('"tools"') == 1


async def test_an_oauth_token_for_mcp_reaches_the_tools_as_its_person(
        sift: ServedSift, oidc: FakeOidc) -> None:
    oidc.account.email = "Ada@Example.com"
    async with mcp_session(sift, oidc.access_token(f"{sift.base_url}/mcp")) as s:
        assert {t.name for t in (await s.list_tools()).tools} == {"search", "ask",
                                                                  "get_document"}
        found = await s.call_tool("search", {"query": "WireGuard VPN profile", "limit": 2})
        asked = await s.call_tool("ask", {"question": QUESTION, "mode": "fast"})
        read = await s.call_tool("get_document", {"id": "vpn"})
    assert not found.is_error and "doc_id: vpn" in text_of(found)
    assert not asked.is_error and not read.is_error
    [interaction] = sift.rows(Interaction)  # recorded like a personal access token's call
    assert (interaction.platform, interaction.user_id) == ("mcp", ADA)
    # The same person through the API, with a token for the API.
    reply = await api(sift, "POST", "/api/v1/search",
                      oidc.access_token(f"{sift.base_url}/api/v1"),
                      json_body={"query": "WireGuard VPN profile"})
    assert reply.status == 200 and reply.body["passages"][0]["doc_id"] == "vpn"


async def test_oauth_tokens_not_for_this_resource_are_refused_saying_why(
        sift: ServedSift, oidc: FakeOidc, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="bot.api.auth")
    mcp, api_v1 = f"{sift.base_url}/mcp", f"{sift.base_url}/api/v1"
    refused = {"the API's token at /mcp": ("/mcp", oidc.access_token(api_v1)),
               "the MCP token at the API": ("/api/v1/search", oidc.access_token(mcp)),
               "expired": ("/mcp", oidc.access_token(mcp, exp=1_700_000_000)),
               "the console's audience": ("/mcp", oidc.access_token("sift-console"))}
    for case, (path, token) in refused.items():
        caplog.clear()
        reply = await api(sift, "POST", path, token, json_body=(
            INITIALIZE if path == "/mcp" else {"query": "vpn"}), headers=ACCEPT)
        assert reply.status == 401, case
        www = reply.headers["WWW-Authenticate"]
        assert 'error="invalid_token"' in www, case
        resource = mcp if path == "/mcp" else api_v1
        assert f'resource_metadata="{sift.base_url}/.well-known/oauth-protected-resource' \
               f'{resource.removeprefix(sift.base_url)}"' in www, case
        sentence = (reply.body["error_description"] if path == "/mcp"
                    else reply.body["detail"])
        assert sentence.startswith("The access token was not accepted"), case
        reference = sentence.rsplit("reference ", 1)[1].rstrip(").")
        [line] = [r.getMessage() for r in caplog.records if "refused an OAuth" in r.message]
        assert reference in line and "claims refused" in line, case
        assert token not in caplog.text, case  # never the token itself
    assert sift.rows(Interaction) == []


async def test_one_identity_one_quota_whichever_token_it_holds(
        tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,
        embedder: LocalEmbedder, fake_anthropic: FakeAnthropic, oidc: FakeOidc) -> None:
    settings = settings_for(tmp_path, weaviate_server, corpus, fake_anthropic, sources=[],
                            chat={"quota_per_minute": 2},
                            admin={"oidc": {"issuer": oidc.url, "client_id": "sift-console"}})
    app = App(settings)
    app.__dict__["embedder"] = embedder
    sift = ServedSift(app)
    await sift.start()
    try:
        pat = app.tokens.create(ADA, expires_in=None).secret
        oauth = oidc.access_token(f"{sift.base_url}/api/v1")
        said = [(await api(sift, "POST", "/api/v1/ask", token,
                           json_body={"question": QUESTION, "mode": "fast"})).status
                for token in (pat, oauth, oauth)]
    finally:
        await sift.stop()
    assert said == [200, 200, 429]


class _Remembered:
    """The client's TokenStorage: a client registered at the provider beforehand."""

    def __init__(self, client: OAuthClientInformationFull) -> None:
        self.client: OAuthClientInformationFull | None = client
        self.tokens: OAuthToken | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_the_mcp_client_finds_the_provider_and_signs_in_by_itself(
        sift: ServedSift, oidc: FakeOidc) -> None:
    """The whole chain the spec describes, driven by the SDK's own OAuth client: the 401,
    the resource metadata, the provider's discovery, code with PKCE and `resource`, then
    a token for /mcp that opens the tools."""
    callback = "http://127.0.0.1:9/callback"  # never reached: the redirect is read here
    came_back: dict[str, str] = {}

    async def sign_in(url: str) -> None:  # the browser: the fake provider consents at once
        async with aiohttp.ClientSession() as browser, browser.get(
                url, allow_redirects=False) as consented:
            query = parse_qs(urlsplit(consented.headers["Location"]).query)
        came_back.update(code=query["code"][0], state=query["state"][0])

    async def redirected() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=came_back["code"], state=came_back["state"])

    storage = _Remembered(OAuthClientInformationFull(
        client_id="sift-console", client_secret="console-secret-5b1e",
        redirect_uris=[AnyUrl(callback)], token_endpoint_auth_method="client_secret_basic"))
    auth = OAuthClientProvider(f"{sift.base_url}/mcp", OAuthClientMetadata(
        redirect_uris=[AnyUrl(callback)], client_name="probe"), storage, sign_in, redirected)
    http = create_mcp_http_client(auth=auth)
    async with http, streamable_http_client(f"{sift.base_url}/mcp", http_client=http) as (
            read, write), ClientSession(read, write) as session:
        await session.initialize()
        found = await session.call_tool("search", {"query": "WireGuard VPN profile"})
    assert not found.is_error and "doc_id: vpn" in text_of(found)
    assert oidc.authorize_queries[-1]["resource"] == f"{sift.base_url}/mcp"
    assert oidc.authorize_queries[-1]["code_challenge_method"] == "S256"
    assert storage.tokens is not None and storage.tokens.access_token.count(".") == 2


async def test_a_provider_that_cannot_be_reached_is_a_503_in_one_sentence(
        tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,
        embedder: LocalEmbedder, fake_anthropic: FakeAnthropic, oidc: FakeOidc) -> None:
    settings = settings_for(tmp_path, weaviate_server, corpus, fake_anthropic, sources=[],
                            admin={"oidc": {"issuer": "http://127.0.0.1:9",
                                            "client_id": "sift-console", "timeout_s": 2}})
    app = App(settings)
    app.__dict__["embedder"] = embedder
    sift = ServedSift(app)
    await sift.start()
    try:
        token = oidc.access_token(f"{sift.base_url}/api/v1")
        reply = await api(sift, "POST", "/api/v1/search", token, json_body={"query": "vpn"})
        mcp = await api(sift, "POST", "/mcp", oidc.access_token(f"{sift.base_url}/mcp"),
                        json_body=INITIALIZE, headers=ACCEPT)
    finally:
        await sift.stop()
    assert reply.status == 503
    assert reply.body["detail"].startswith("The identity provider could not be reached")
    assert mcp.status == 503 and "could not be reached" in mcp.body["error_description"]
