"""Jira and GitHub pushes through `sift serve`: a signed change is searchable within 5 s, a
deletion leaves as fast; a forged or replayed call is 401 and changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr

from bot.settings import SourceSettings
from rag.embed import LocalEmbedder
from tests.fakes.github_payloads import WEBHOOK_SECRET as GITHUB_SECRET
from tests.fakes.github_payloads import discussion_payload, push_payload, webhook
from tests.fakes.github_server import TOKEN as GITHUB_TOKEN
from tests.fakes.github_server import FakeDiscussion, FakeGitHub
from tests.fakes.jira_server import (
    EMAIL,
    TOKEN,
    WEBHOOK_SECRET,
    FakeIssue,
    FakeJira,
    adf,
    grant,
    hub_signed,
    issue_event,
)
from tests.scenarios.push_support import probe, until
from tests.scenarios.slack_stack import Serve
from tests.scenarios.stack import ServedSift

pytestmark = pytest.mark.weaviate


async def refused(sift: ServedSift, path: str, body: bytes, *headers: dict[str, str]) -> None:
    for h in headers:
        status, text = await sift.post(path, data=body, headers=h)
        assert status == 401, (h, text)
        assert WEBHOOK_SECRET not in text and GITHUB_SECRET not in text


# --- Jira: admin webhooks, X-Hub-Signature over the body, the body's own timestamp ------------

@pytest.fixture
async def jira() -> AsyncIterator[FakeJira]:
    server = FakeJira()
    server.schemes["IT"] = [grant("anyone")]
    server.put(FakeIssue("IT-1", "Deploy freeze", adf("Deploys freeze on Fridays.")))
    await server.start()
    yield server
    await server.stop()


async def issue_push(sift: ServedSift, event: str, key: str) -> int:
    body = issue_event(event, key)
    status, _ = await sift.post("/sync/hooks/tickets", data=body, headers=hub_signed(body))
    return status


async def test_jira_pushes(make_served: Serve, jira: FakeJira, embedder: LocalEmbedder) -> None:
    source = SourceSettings.model_validate({
        "name": "tickets", "kind": "jira", "url": jira.url, "token": SecretStr(TOKEN),
        "jira": {"email": EMAIL, "projects": ["IT"], "webhook_secret": WEBHOOK_SECRET}})
    sift = (await make_served(sources=[source])).sift
    async with probe(sift, embedder, "tickets") as index:
        body = issue_event("jira:issue_created", "IT-1")
        old = issue_event("jira:issue_created", "IT-1", datetime.now(UTC) - timedelta(hours=1))
        await refused(sift, "/sync/hooks/tickets", body, {}, hub_signed(body, "a guess"),
                      hub_signed(issue_event("jira:issue_created", "IT-2")))
        await refused(sift, "/sync/hooks/tickets", old, hub_signed(old))
        await index.settled_empty()
        assert jira.reads("IT-1") == 0

        assert await issue_push(sift, "jira:issue_created", "IT-1") == 202
        await until(lambda: index.finds("IT-1", "Deploys freeze on Fridays."))
        jira.change("IT-1", description=adf("Deploys freeze on Thursdays from noon."))
        assert await issue_push(sift, "jira:issue_updated", "IT-1") == 202
        await until(lambda: index.finds("IT-1", "Deploys freeze on Thursdays from noon."))
        del jira.issues["IT-1"]
        assert await issue_push(sift, "jira:issue_deleted", "IT-1") == 202
        await until(lambda: index.gone("IT-1"))


# --- GitHub: X-Hub-Signature-256; push names files, discussion names the discussion ----------

@pytest.fixture
async def github() -> AsyncIterator[FakeGitHub]:
    server = FakeGitHub()
    repo = server.repo("acme/handbook", {"docs/deploy.md": "# Deploy\n\nShip on Tuesdays."})
    repo.discussions[3] = FakeDiscussion(3, "When do we ship?", "Which day?", answer="Tuesday.")
    await server.start()
    yield server
    await server.stop()


async def test_github_pushes(make_served: Serve, github: FakeGitHub,
                             embedder: LocalEmbedder) -> None:
    source = SourceSettings.model_validate({
        "name": "code", "kind": "github", "url": github.url, "token": SecretStr(GITHUB_TOKEN),
        "github": {"repos": ["acme/handbook"], "webhook_secret": GITHUB_SECRET, "wiki": True}})
    sift = (await make_served(sources=[source])).sift
    hook = "/sync/hooks/code"
    async with probe(sift, embedder, "code") as index:
        body, headers = webhook("push", push_payload("acme/handbook", added=["docs/deploy.md"]))
        _, foreign = webhook("push", push_payload("acme/handbook", added=["docs/deploy.md"]),
                             secret="not this source's")
        await refused(sift, hook, body, {"X-GitHub-Event": "push"}, foreign)
        await index.settled_empty()

        status, _ = await sift.post(hook, data=body, headers=headers)
        assert status == 202
        await until(lambda: index.finds("acme/handbook:docs/deploy.md", "Ship on Tuesdays."))
        github.commit("acme/handbook", {"docs/deploy.md": "# Deploy\n\nShip on Wednesdays."})
        body, headers = webhook("push", push_payload("acme/handbook",
                                                     modified=["docs/deploy.md"]))
        assert (await sift.post(hook, data=body, headers=headers))[0] == 202
        await until(lambda: index.finds("acme/handbook:docs/deploy.md", "Ship on Wednesdays."))
        body, headers = webhook("discussion", discussion_payload("acme/handbook", 3, "answered"))
        assert (await sift.post(hook, data=body, headers=headers))[0] == 202
        await until(lambda: index.finds("acme/handbook#discussion-3", "Tuesday."))
        github.wikis.write("acme/handbook", {"Release-Train.md": "The train leaves at noon."})
        body, headers = webhook("gollum", {"pages": [{
            "page_name": "Release-Train", "title": "Release Train", "action": "created",
            "sha": "91ea1bd42aa2ba166b86e8aefe049e9837214e67",
            "html_url": f"{github.url}/acme/handbook/wiki/Release-Train"}],
            "repository": {"full_name": "acme/handbook", "default_branch": "main"}})
        assert (await sift.post(hook, data=body, headers=headers))[0] == 202
        await until(lambda: index.finds("acme/handbook.wiki:Release-Train.md",
                                        "The train leaves at noon."))
        github.commit("acme/handbook", {"docs/deploy.md": None})
        body, headers = webhook("push", push_payload("acme/handbook",
                                                     removed=["docs/deploy.md"]))
        assert (await sift.post(hook, data=body, headers=headers))[0] == 202
        await until(lambda: index.gone("acme/handbook:docs/deploy.md"))
