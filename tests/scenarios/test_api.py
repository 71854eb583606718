"""The HTTP API through `sift serve` (real Weaviate, SQLite, the fake Anthropic server): each
route's authentication, bad input as one sentence, streaming, votes reaching the feedback
store, quotas, and the OpenAPI description."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest
from jsonschema import Draft202012Validator

from rag import messages
from rag.embed import LocalEmbedder
from storage.models import Feedback, Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.permissions.tool_client import api
from tests.scenarios.stack import ServedSift, serving, settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

ADA, BOB = "ada@example.com", "bob@example.com"
QUESTION = "How do I rotate the staging database credentials?"
ROUTES = [("POST", "/api/v1/ask", {"question": QUESTION}),
          ("POST", "/api/v1/search", {"query": QUESTION}),
          ("GET", "/api/v1/documents/vpn", None),
          ("POST", "/api/v1/answers/0123abcd/vote", {"vote": 1})]


@pytest.fixture
async def sift(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,
               embedder: LocalEmbedder, fake_anthropic: FakeAnthropic
               ) -> AsyncIterator[ServedSift]:
    settings = settings_for(tmp_path, weaviate_server, corpus, fake_anthropic, sources=[],
                            chat={"quota_per_minute": 4, "max_message_chars": 200})
    async with serving(settings, embedder) as served:
        yield served


def _problem(reply_body: object, reply_headers: dict[str, str]) -> str:
    assert reply_headers["Content-Type"].startswith("application/problem+json")
    assert isinstance(reply_body, dict)
    detail = reply_body["detail"]
    assert isinstance(detail, str) and detail.endswith(".") and "\n" not in detail
    return detail


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[r[1] for r in ROUTES])
async def test_every_route_refuses_a_missing_wrong_revoked_or_expired_token(
        sift: ServedSift, method: str, path: str, body: object) -> None:
    revoked = sift.app.tokens.create(ADA, expires_in=None)
    sift.app.tokens.revoke(revoked.token.id)
    expired = sift.app.tokens.create(ADA, expires_in=timedelta(microseconds=1)).secret
    metadata = f"{sift.base_url}/.well-known/oauth-protected-resource/api/v1"
    cases = {"none": None, "wrong": "sift_pat_" + "x" * 43, "not ours": "ghp_abc",
             "revoked": revoked.secret, "expired": expired}
    for name, token in cases.items():
        reply = await api(sift, method, path, token, json_body=body)
        assert reply.status == 401, name
        detail = _problem(reply.body, reply.headers)
        challenge = reply.headers["WWW-Authenticate"]
        assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata}"' in challenge
        assert ('error="invalid_token"' in challenge) is (token is not None), name
        assert ("sift tokens create" in detail), detail
    basic = await api(sift, method, path, headers={"Authorization": "Basic YWRhOnB3"},
                      json_body=body)
    assert basic.status == 401
    assert sift.rows(Interaction) == []
    described = await api(sift, "GET", "/.well-known/oauth-protected-resource/api/v1")
    assert described.body == {"resource": f"{sift.base_url}/api/v1",
                              "bearer_methods_supported": ["header"], "resource_name": "Sift"}


@pytest.mark.parametrize(("path", "body", "status", "sentence"), [
    ("/api/v1/ask", "not json", 400, "The request body is not JSON."),
    ("/api/v1/ask", {}, 422, "The request needs the field 'question'."),
    ("/api/v1/ask", {"question": "x", "groups": ["hr"]}, 422,
     "The request has a field 'groups' that this API does not take."),
    ("/api/v1/ask", {"question": "x", "mode": "slow"}, 422, "The field 'mode' is not valid"),
    ("/api/v1/ask", {"question": "   "}, 400, messages.EMPTY_QUESTION),
    ("/api/v1/ask", {"question": "y" * 201}, 400, messages.TOO_LONG.format(length=201,
                                                                             limit=200)),
    ("/api/v1/search", {"query": "vpn", "limit": 0}, 422, "The field 'limit' is not valid"),
    ("/api/v1/answers/abc/vote", {"vote": 2}, 422, "The field 'vote' is not valid"),
])
async def test_bad_input_is_one_sentence_naming_it(sift: ServedSift, path: str, body: object,
                                                   status: int, sentence: str) -> None:
    token = sift.app.tokens.create(ADA, expires_in=None).secret
    async with aiohttp.ClientSession() as session, session.post(
            sift.base_url + path, headers={"Authorization": f"Bearer {token}"},
            **({"data": body} if isinstance(body, str) else {"json": body})) as response:
        assert response.status == status
        detail = _problem(await response.json(content_type=None), dict(response.headers))
    assert detail.startswith(sentence)
    assert sift.rows(Interaction) == []


async def test_an_answer_its_person_votes_on_reaches_the_feedback_store(
        sift: ServedSift) -> None:
    ada, bob = (sift.app.tokens.create(e, expires_in=None).secret for e in (ADA, BOB))
    asked = await api(sift, "POST", "/api/v1/ask", ada,
                      json_body={"question": QUESTION, "mode": "accurate"})
    assert asked.status == 200, asked.body
    assert asked.body["status"] == "answered" and asked.body["mode"] == "accurate"
    assert asked.body["citations"] and asked.body["citations"][0]["doc_id"] == "staging-creds"
    answer = asked.body["id"]
    assert len(answer) == 32
    elsewhere = await api(sift, "POST", f"/api/v1/answers/{answer}/vote", bob,
                          json_body={"vote": -1})
    assert elsewhere.status == 404  # another person's answer is not theirs to vote on
    assert _problem(elsewhere.body, elsewhere.headers) == messages.UNKNOWN_ANSWER_FEEDBACK
    voted = await api(sift, "POST", f"/api/v1/answers/{answer}/vote", ada,
                      json_body={"vote": 1, "comment": "spot on"})
    assert voted.status == 200 and voted.body == {"message": messages.FEEDBACK_THANKS}
    [interaction] = sift.rows(Interaction)
    assert (interaction.platform, interaction.user_id, interaction.message_ref) == (
        "api", ADA, answer)
    [feedback] = sift.rows(Feedback)
    assert (feedback.interaction_id, feedback.user_id, feedback.vote) == (
        interaction.id, ADA, 1)


async def test_ask_streams_previews_then_the_answer(sift: ServedSift,
                                                    fake_anthropic: FakeAnthropic) -> None:
    token = sift.app.tokens.create(ADA, expires_in=None).secret
    plain = await api(sift, "POST", "/api/v1/ask", token, json_body={"question": QUESTION})
    async with aiohttp.ClientSession() as session, session.post(
            f"{sift.base_url}/api/v1/ask", json={"question": QUESTION},
            headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    ) as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        events = [block.split("\n", 1) for block in (await response.text()).split("\n\n")
                  if block]
    names = [head.removeprefix("event: ") for head, _ in events]
    assert names[-1] == "answer" and set(names[:-1]) == {"preview"}, names
    answer = json.loads(events[-1][1].removeprefix("data: "))
    assert answer["text"] == plain.body["text"] and answer["status"] == "answered"
    previews = [json.loads(data.removeprefix("data: "))["text"] for _, data in events[:-1]]
    assert previews and answer["text"].startswith(previews[-1][:20])


async def test_the_quota_counts_every_call_of_one_person(sift: ServedSift) -> None:
    first, second = (sift.app.tokens.create(ADA, expires_in=None).secret for _ in range(2))
    bob = sift.app.tokens.create(BOB, expires_in=None).secret
    for token in (first, second, first, second):  # two tokens, one person: one quota
        assert (await api(sift, "POST", "/api/v1/search", token,
                          json_body={"query": "vpn"})).status == 200
    over = await api(sift, "POST", "/api/v1/ask", first, json_body={"question": QUESTION})
    assert over.status == 429
    assert _problem(over.body, over.headers) == messages.QUOTA_EXCEEDED.format(limit=4)
    assert (await api(sift, "POST", "/api/v1/search", bob, json_body={"query": "vpn"})
            ).status == 200


async def test_a_document_reads_whole_and_search_names_where_it_comes_from(
        sift: ServedSift) -> None:
    token = sift.app.tokens.create(ADA, expires_in=None).secret
    found = await api(sift, "POST", "/api/v1/search", token,
                      json_body={"query": "WireGuard VPN profile", "limit": 3})
    top = found.body["passages"][0]
    assert (top["doc_id"], top["title"]) == ("vpn", "Setting up the VPN")
    assert {"url", "source", "section", "text", "score", "updated_at"} <= set(top)
    read = await api(sift, "GET", "/api/v1/documents/vpn", token)
    assert read.status == 200 and "Install WireGuard" in read.body["text"]
    by_url = await api(sift, "GET", f"/api/v1/documents/{top['url']}", token)
    assert by_url.status == 200 and by_url.body["doc_id"] == "vpn"


async def test_the_openapi_description_is_valid_and_names_every_route(
        sift: ServedSift) -> None:
    reply = await api(sift, "GET", "/api/v1/openapi.json")
    assert reply.status == 200
    document = reply.body
    assert set(document["paths"]) == {"/api/v1/ask", "/api/v1/search",
                                      "/api/v1/documents/{id}", "/api/v1/answers/{id}/vote"}
    schemas = document["components"]["schemas"]
    for name, schema in schemas.items():
        Draft202012Validator.check_schema(schema)  # each is a valid JSON Schema
        assert name
    refs = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "$ref" in node:
                refs.add(node["$ref"].removeprefix("#/components/schemas/"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    assert refs and refs <= set(schemas)  # every reference resolves
    assert document["servers"] == [{"url": sift.base_url}]
