"""Jira and GitHub webhook receivers, driven with the attacker's requests as well as the
platform's: unsigned, forged, replayed, signed with another secret, or naming nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr

from sync.connectors.base import SourceConfig
from sync.connectors.github import GitHubSettings
from sync.connectors.github import push as github_push
from sync.connectors.github_push import GitHubReceiver
from sync.connectors.jira import JiraSettings
from sync.connectors.jira import push as jira_push
from sync.connectors.jira_push import JiraReceiver
from sync.push import MalformedBody, PushRejected, PushRequest
from tests.fakes.github_payloads import (
    WEBHOOK_SECRET as GITHUB_SECRET,
)
from tests.fakes.github_payloads import (
    discussion_payload,
    push_payload,
    webhook,
)
from tests.fakes.jira_server import WEBHOOK_SECRET as JIRA_SECRET
from tests.fakes.jira_server import hub_signed, issue_event

SOURCE = SourceConfig("s", url="http://x", token="t")


def request(body: bytes, headers: dict[str, str]) -> PushRequest:
    return PushRequest("POST", {k.lower(): v for k, v in headers.items()}, {}, body)


def jira(secret: str | None = JIRA_SECRET) -> JiraReceiver:
    return jira_push(SOURCE, JiraSettings(projects=["IT"], webhook_secret=SecretStr(secret)
                                          if secret else None))


def github(issues: bool = False, wiki: bool = False) -> GitHubReceiver:
    return github_push(SOURCE, GitHubSettings(repos=["acme/handbook"], issues=issues, wiki=wiki,
                                              webhook_secret=SecretStr(GITHUB_SECRET)))


@pytest.mark.parametrize("event", ["jira:issue_created", "jira:issue_updated",
                                   "jira:issue_deleted", "comment_created"])
def test_jira_names_the_issue_of_a_signed_event(event: str) -> None:
    body = issue_event(event, "IT-7")
    reply = jira().receive(request(body, hub_signed(body)))
    assert (reply.status, reply.doc_ids) == (202, ("IT-7",))


def test_jira_refuses_the_unsigned_the_forged_the_stale_and_the_unconfigured() -> None:
    body = issue_event("jira:issue_updated", "IT-7")
    old = issue_event("jira:issue_updated", "IT-7", datetime.now(UTC) - timedelta(minutes=10))
    tampered = body.replace(b"IT-7", b"IT-8")
    for attempt, headers, receiver in (
            (body, {}, jira()), (body, hub_signed(body, "a guess"), jira()),
            (tampered, hub_signed(body), jira()), (old, hub_signed(old), jira()),
            (body, hub_signed(body), jira(None))):
        with pytest.raises(PushRejected) as refused:
            receiver.receive(request(attempt, headers))
        assert JIRA_SECRET not in str(refused.value)


def test_jira_ignores_other_events_and_refuses_a_signed_body_that_is_not_json() -> None:
    body = json.dumps({"timestamp": int(datetime.now(UTC).timestamp() * 1000),
                       "webhookEvent": "project_created"}).encode()
    assert jira().receive(request(body, hub_signed(body))).doc_ids == ()
    body = b"not json"  # signed, so verified: malformed as every receiver says it (400)
    with pytest.raises(MalformedBody):
        jira().receive(request(body, hub_signed(body)))


def test_a_jira_notification_is_good_once() -> None:
    body = json.dumps({"timestamp": int(datetime.now(UTC).timestamp() * 1000),
                       "webhookEvent": "jira:issue_updated", "issue": {"key": "IT-7"}}).encode()
    headers = hub_signed(body)
    reply = jira().receive(request(body, headers))
    assert reply.doc_ids == ("IT-7",) and reply.replay_key == headers["X-Hub-Signature"]


def test_github_push_names_changed_documentation_files_only() -> None:
    body, headers = webhook("push", push_payload("acme/handbook", added=["docs/new.md"],
                                                 modified=["src/app.py", "README.md"],
                                                 removed=["docs/old.md"]))
    reply = github().receive(request(body, headers))
    assert reply.doc_ids == ("acme/handbook:docs/new.md", "acme/handbook:README.md",
                             "acme/handbook:docs/old.md")
    other = {**push_payload("acme/handbook", modified=["README.md"]), "ref": "refs/heads/dev"}
    body, headers = webhook("push", other)
    assert github().receive(request(body, headers)).doc_ids == ()  # not the default branch


def test_github_names_discussions_and_issues_when_chosen() -> None:
    body, headers = webhook("discussion", discussion_payload("acme/handbook", 4, "answered"))
    assert github().receive(request(body, headers)).doc_ids == ("acme/handbook#discussion-4",)
    issue = {"action": "edited", "issue": {"number": 9}, "repository": {
        "full_name": "acme/handbook"}}
    body, headers = webhook("issues", issue)
    assert github().receive(request(body, headers)).doc_ids == ()  # issues not chosen
    assert github(issues=True).receive(request(body, headers)).doc_ids == (
        "acme/handbook#issue-9",)
    body, headers = webhook("discussion", {"action": "edited", "discussion": {},
                                           "repository": {"full_name": "acme/handbook"}})
    assert github().receive(request(body, headers)).status == 400


def test_github_refuses_the_unsigned_the_forged_and_the_other_secret() -> None:
    body, headers = webhook("push", push_payload("acme/handbook", modified=["README.md"]))
    _, foreign = webhook("push", push_payload("acme/handbook", modified=["README.md"]),
                         secret="another repository's secret")
    legacy = {k: v for k, v in headers.items() if k != "X-Hub-Signature-256"} | {
        "X-Hub-Signature": "sha1=" + "0" * 40}  # the SHA-1 header alone is not accepted
    for attempt, given in ((body, {"X-GitHub-Event": "push"}), (body, foreign),
                           (body.replace(b"README", b"SECRETS"), headers), (body, legacy)):
        with pytest.raises(PushRejected) as refused:
            github().receive(request(attempt, given))
        assert GITHUB_SECRET not in str(refused.value)


def test_github_gollum_asks_for_a_run_when_the_source_reads_wikis() -> None:
    body, headers = webhook("gollum", {"pages": [{"page_name": "Home", "action": "edited"}],
                                       "repository": {"full_name": "acme/handbook"}})
    assert github().receive(request(body, headers)).resync is False
    reply = github(wiki=True).receive(request(body, headers))
    assert (reply.status, reply.resync, reply.doc_ids) == (202, True, ())
