"""The canary suite for the HTTP API and MCP: a personal access token, and an OAuth access
token from the console's OpenID provider, sees what its email sees in a DM, through search,
ask and get_document; a revoked or expired token, or one for another resource, nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path

import pytest

from bot.settings import GroupSettings
from rag.embed import LocalEmbedder
from storage.models import Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.oidc_server import FakeOidc
from tests.permissions.canary import (
    FIN_EMAIL,
    HR,
    HR_EMAIL,
    QUESTION,
    STRANGER,
    markers_in,
    visible,
)
from tests.permissions.tool_client import api, mcp_session, text_of
from tests.scenarios.stack import ServedSift, serving, settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

READERS = {HR_EMAIL: visible("hr"), FIN_EMAIL: visible("finance"), STRANGER: visible()}
# (email, the surface's path) -> a bearer token for that person and resource
Tokens = Callable[[str, str], str]


@pytest.fixture
async def oidc() -> AsyncIterator[FakeOidc]:
    async with FakeOidc("sift-console", "console-secret") as server:
        assert isinstance(server, FakeOidc)
        yield server


@pytest.fixture
async def sift(tmp_path: Path, weaviate_server: ManagedWeaviate, canary_collection: str,
               embedder: LocalEmbedder, echoing_claude: FakeAnthropic, oidc: FakeOidc
               ) -> AsyncIterator[ServedSift]:
    settings = settings_for(
        tmp_path, weaviate_server, canary_collection, echoing_claude, sources=[],
        groups=[GroupSettings(name="hr", emails=[HR_EMAIL]),
                GroupSettings(name="finance", domains=["finance.acme.example"])],
        admin={"oidc": {"issuer": oidc.url, "client_id": "sift-console"}})
    async with serving(settings, embedder) as served:
        yield served


def _token(sift: ServedSift, email: str, expires: timedelta | None = None) -> str:
    return sift.app.tokens.create(email, expires_in=expires).secret


@pytest.fixture(params=["personal", "oauth"])
def token_for(request: pytest.FixtureRequest, sift: ServedSift, oidc: FakeOidc) -> Tokens:
    if request.param == "personal":
        return lambda email, path: _token(sift, email)
    return lambda email, path: oidc.access_token(sift.base_url + path, email=email)


async def _hr_doc_id(sift: ServedSift) -> str:
    reply = await api(sift, "POST", "/api/v1/search", _token(sift, HR_EMAIL),
                      json_body={"query": QUESTION, "limit": 20})
    return next(p["doc_id"] for p in reply.body["passages"] if HR in p["text"])


async def test_each_token_sees_what_its_email_sees_through_the_api(
        sift: ServedSift, token_for: Tokens) -> None:
    hr_doc = await _hr_doc_id(sift)
    for email, allowed in READERS.items():
        token = token_for(email, "/api/v1")
        found = await api(sift, "POST", "/api/v1/search", token,
                          json_body={"query": QUESTION, "limit": 20})
        assert found.status == 200
        assert markers_in(json.dumps(found.body)) == allowed, email
        asked = await api(sift, "POST", "/api/v1/ask", token, json_body={"question": QUESTION})
        assert asked.status == 200 and asked.body["status"] == "answered"
        assert markers_in(asked.body["text"]) == allowed, email
        read = await api(sift, "GET", f"/api/v1/documents/{hr_doc}", token)
        if HR in allowed:
            assert read.status == 200 and HR in read.body["text"]
        else:  # the same 404 as a document that does not exist: nothing to probe with
            assert read.status == 404 and HR not in json.dumps(read.body)
            missing = await api(sift, "GET", "/api/v1/documents/no-such-doc", token)
            assert (missing.status, missing.body["detail"].split(" ")[:3]) == (
                404, read.body["detail"].split(" ")[:3])
    rows = sift.rows(Interaction)
    assert [(r.platform, r.user_id) for r in rows] == [("api", e) for e in READERS]


async def test_each_token_sees_what_its_email_sees_through_mcp(
        sift: ServedSift, token_for: Tokens) -> None:
    hr_doc = await _hr_doc_id(sift)
    for email, allowed in READERS.items():
        async with mcp_session(sift, token_for(email, "/mcp")) as session:
            found = await session.call_tool("search", {"query": QUESTION, "limit": 20})
            assert not found.is_error
            assert markers_in(text_of(found)) == allowed, email
            assert markers_in(json.dumps(found.structured_content)) == allowed, email
            asked = await session.call_tool("ask", {"question": QUESTION})
            assert markers_in(text_of(asked)) == allowed, email
            read = await session.call_tool("get_document", {"id": hr_doc})
            if HR in allowed:
                assert not read.is_error and HR in text_of(read)
            else:
                assert read.is_error and markers_in(text_of(read)) == set()
    rows = sift.rows(Interaction)
    assert [(r.platform, r.user_id) for r in rows] == [("mcp", e) for e in READERS]


async def test_revoked_expired_or_misdirected_tokens_reach_nothing(
        sift: ServedSift, oidc: FakeOidc) -> None:
    hr_doc = await _hr_doc_id(sift)
    revoked = sift.app.tokens.create(HR_EMAIL, expires_in=None)
    sift.app.tokens.revoke(revoked.token.id)
    expired = _token(sift, HR_EMAIL, timedelta(microseconds=1))
    elsewhere = oidc.access_token("https://wiki.acme.example", email=HR_EMAIL)
    stale = oidc.access_token(sift.base_url + "/mcp", email=HR_EMAIL, exp=1_700_000_000)
    for token in (revoked.secret, expired, elsewhere, stale):
        for method, path, body in (("POST", "/api/v1/search", {"query": QUESTION}),
                                   ("POST", "/api/v1/ask", {"question": QUESTION}),
                                   ("GET", f"/api/v1/documents/{hr_doc}", None)):
            reply = await api(sift, method, path, token, json_body=body)
            assert reply.status == 401, (path, reply.body)
            assert markers_in(json.dumps(reply.body)) == set()
        posted = await api(sift, "POST", "/mcp", token, json_body={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": QUESTION}}},
            headers={"Accept": "application/json, text/event-stream"})
        assert posted.status == 401 and markers_in(json.dumps(posted.body)) == set()
    assert sift.rows(Interaction) == []


async def test_an_oauth_tokens_own_group_claims_grant_nothing(sift: ServedSift,
                                                              oidc: FakeOidc) -> None:
    """Groups come from Sift's rule for the email, never from what the token claims."""
    token = oidc.access_token(sift.base_url + "/api/v1", email=STRANGER,
                              groups=["hr", "finance"], roles=["hr"])
    found = await api(sift, "POST", "/api/v1/search", token,
                      json_body={"query": QUESTION, "limit": 20})
    assert found.status == 200 and markers_in(json.dumps(found.body)) == visible()
