"""The GitHub connector through the sync job, against a fake GitHub (REST and GraphQL)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rag.errors import ConfigError, SyncError
from sync.connectors.base import DocumentFailure, DocumentGone, SourceConfig, SourceDocument
from sync.connectors.github import GitHubConnector, GitHubSettings, build
from sync.job import JobConfig, SyncJob
from tests.fakes.github_payloads import comment, issue
from tests.fakes.github_server import APP_ID, INSTALLATION, TOKEN, FakeDiscussion, FakeGitHub
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.platform_server import Fault
from tests.sync.conftest import HashEmbedder, paragraph
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble

SOURCE = "code"
KNOWN = frozenset({"public", "github:team:acme/platform", "github:user:mona",
                   "github:internal:acme"})


def org(server: FakeGitHub) -> None:
    handbook = server.repo("acme/handbook", {
        "README.md": f"# Handbook\n\n{paragraph('handbook', 3)}",
        "docs/vpn.md": f"---\ntitle: VPN setup\n---\n\n## Install\n\n{paragraph('vpn', 3)}",
        "docs/old.md": f"# Old\n\n{paragraph('old', 2)}",
        "docs/logo.png": b"\x89PNG\r\n\x1a\n",
        "src/main.py": "print('not documentation')\n",
        "notes/README.md": "# Nested readme, not chosen\n"})
    handbook.discussions[1] = FakeDiscussion(1, "How do I get VPN access?",
                                             "Which form do I fill in?", answer="Use form IT-7.",
                                             labels=["vpn"])
    handbook.discussions[2] = FakeDiscussion(2, "Announcements", "Office closed on Friday.",
                                             category="General")
    server.repo("acme/platform", {"README.md": f"# Platform\n\n{paragraph('platform', 2)}"},
                visibility="private", teams=["platform"], collaborators=["mona"])
    server.repo("acme/intranet", {"README.md": f"# Intranet\n\n{paragraph('intranet', 2)}"},
                visibility="internal", teams=[])
    server.repo("acme/secret", {"README.md": f"# Secret\n\n{paragraph('secret', 2)}"},
                visibility="private", teams=None)  # the token may not list who reads it


@pytest.fixture
async def github() -> AsyncIterator[FakeGitHub]:
    server = FakeGitHub()
    org(server)
    await server.start()
    yield server
    await server.stop()


REPOS = ["acme/handbook", "acme/platform", "acme/intranet", "acme/secret"]


def connector(server: FakeGitHub, **overrides: Any) -> GitHubConnector:
    token = overrides.pop("token", TOKEN)
    options = {"repos": REPOS, "backoff_s": 0.01, "max_wait_s": 3.0, **overrides}
    return build(SourceConfig(SOURCE, url=server.url, token=token), GitHubSettings(**options))


def job(server: FakeGitHub, index: MemoryIndex, state: MemorySyncState, **overrides: Any
        ) -> SyncJob:
    return SyncJob(SOURCE, connector(server, **overrides), index, HashEmbedder(), state,
                   JobConfig(known_groups=KNOWN))


async def documents(server: FakeGitHub, **overrides: Any) -> dict[str, Any]:
    return {d.doc_id or "-": d async for d in connector(server, **overrides).documents(None)}


async def test_files_and_discussions_map_to_documents(github: FakeGitHub) -> None:
    docs = await documents(github)
    assert set(docs) == {"acme/handbook:README.md", "acme/handbook:docs/vpn.md",
                         "acme/handbook:docs/old.md", "acme/handbook#discussion-1",
                         "acme/handbook#discussion-2", "acme/platform:README.md",
                         "acme/intranet:README.md", "acme/secret:README.md"}
    vpn = docs["acme/handbook:docs/vpn.md"]
    assert vpn.title == "VPN setup" and vpn.body.startswith("## Install")
    assert vpn.url == f"{github.url}/acme/handbook/blob/main/docs/vpn.md"
    assert vpn.access == ("public",) and vpn.tags == ("handbook", "docs")
    question = docs["acme/handbook#discussion-1"]
    assert "Which form do I fill in?" in question.body
    assert "## Accepted answer\n\nUse form IT-7." in question.body
    assert question.tags == ("Q&A", "vpn") and question.authors == ("octocat", "hubot")
    assert docs["acme/platform:README.md"].access == ("github:team:acme/platform",
                                                      "github:user:mona")
    assert docs["acme/intranet:README.md"].access == ("github:internal:acme",)
    secret = docs["acme/secret:README.md"]
    assert secret.access == () and "cannot be listed" in secret.warnings[0]


async def test_sync_indexes_updates_and_prunes(github: FakeGitHub) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    first = await job(github, index, state).run(full=True)
    assert (first.counts.added, first.counts.failed, first.errors) == (8, 0, ())
    blobs = github.reads("/repos/acme/handbook/git/blobs")
    again = await job(github, index, state).run()
    assert again.counts.added == again.counts.updated == again.counts.deleted == 0
    assert github.reads("/repos/acme/handbook/git/blobs") == blobs  # nothing changed: no reads
    github.commit("acme/handbook", {"docs/vpn.md": "# VPN\n\nUse the new client from now on.",
                                    "docs/old.md": None, "docs/new.md": "# New\n\nFresh page.",
                                    "src/main.py": "print('still not documentation')\n"})
    handbook = github.repos["acme/handbook"]
    handbook.discussions[1].answer = "Use form IT-9 instead."
    handbook.discussions[1].updated = handbook.history[-1].date
    changed = await job(github, index, state).run()
    assert (changed.counts.added, changed.counts.updated, changed.counts.deleted) == (1, 2, 1)
    assert github.reads("/repos/acme/handbook/git/blobs") == blobs + 2  # the two changed docs
    text = " ".join(c.text for c, _ in index.chunks.values())
    assert "new client" in text and "IT-9" in text
    del handbook.discussions[2]  # deleted: the cheap id listing prunes it on any run
    pruned = await job(github, index, state).run()
    assert pruned.counts.deleted == 1
    assert "acme/handbook#discussion-2" not in await index.list_documents(SOURCE)


async def test_an_organisation_filtered_by_name(github: FakeGitHub) -> None:
    github.orgs["acme"] = REPOS
    github.page_cap = 2  # the listing pages through a Link header
    docs = await documents(github, repos=[], org="acme", include=["*"], exclude=["sec*"],
                           discussions=False)
    assert {d.split(":")[0] for d in docs} == {"acme/handbook", "acme/platform",
                                               "acme/intranet"}


async def test_a_repository_that_does_not_exist_is_reported_and_the_rest_syncs(
        github: FakeGitHub) -> None:
    summary = await job(github, MemoryIndex(), MemorySyncState(),
                        repos=["acme/handbok", "acme/platform"]).run(full=True)
    assert summary.counts.added == 1
    assert summary.errors == ("repository acme/handbok: not found, or the token may not read "
                              "it; skipped",)


async def test_huge_and_unconvertible_files_are_named_and_the_rest_syncs(
        github: FakeGitHub) -> None:
    github.commit("acme/handbook", {"docs/huge.md": "# Huge\n\n" + "x" * 3_000_000,
                                    "docs/binary.md": b"\x00\x81\x8d\x8f\x90\x9d\xff\xfe" * 50,
                                    "docs/yaml.md": "---\ntitle: [unclosed\n---\n\nBody"})
    index = MemoryIndex()
    summary = await job(github, index, MemorySyncState()).run(full=True)
    assert summary.counts.added == 8
    binary, huge, yaml = sorted(summary.errors)
    assert huge == ("acme/handbook/docs/huge.md is 2.9 MB, over `github.max_file_bytes` (2 MB): "
                    "skipped")
    assert binary == ("acme/handbook/docs/binary.md: not UTF-8 text (byte 1), and no other "
                      "text encoding fits it")
    assert yaml.startswith("acme/handbook/docs/yaml.md: invalid YAML front matter (line 2)")
    # The huge file was judged by the tree's size: five blobs read, not six.
    assert github.reads("/repos/acme/handbook/git/blobs") == 5


async def test_a_revoked_token_names_the_source(github: FakeGitHub,
                                                caplog: pytest.LogCaptureFixture) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    with pytest.raises(SyncError) as caught:
        await job(github, index, state, token="github_pat_revoked").run(full=True)
    assert "Source 'code' (GitHub) answered HTTP 401" in caught.value.user_message
    assert "fine-grained token" in caught.value.user_message
    assert await index.list_documents(SOURCE) == {} and state.docs == {}
    assert "github_pat_revoked" not in caplog.text and TOKEN not in caplog.text


async def test_a_github_app_buys_installation_tokens_and_renews_them(
        github: FakeGitHub, tmp_path: Path) -> None:
    app = {"app_id": APP_ID, "installation_id": INSTALLATION,
           "private_key_file": github.private_key_file(tmp_path), "token": None}
    first = await documents(github, **app)
    assert len(first) == 8 and github.installation_tokens == [f"ghs_0{'x' * 30}"]
    github.token_lifetime = 10  # each token expires during the run: bought again on its 401
    again = await documents(github, **app)
    assert again.keys() == first.keys() and len(github.installation_tokens) >= 3
    with pytest.raises(SyncError) as caught:
        await documents(github, **{**app, "installation_id": 99})
    assert "GitHub refused an installation token (HTTP 404); check `github.app_id`, " \
        "`github.installation_id`" in caught.value.user_message
    (tmp_path / "bad.pem").write_text("not a key")
    with pytest.raises(ConfigError) as refused:
        connector(github, **{**app, "private_key_file": tmp_path / "bad.pem"})
    assert "`github.private_key_file`" in refused.value.user_message
    assert "is not a readable PEM private key" in refused.value.user_message


@pytest.mark.parametrize("headers", [
    {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "{soon}"},  # the primary limit
    {"retry-after": "1"}])  # a secondary limit
async def test_rate_limits_are_waited_out(github: FakeGitHub, headers: dict[str, str]) -> None:
    soon = str(int(time.time()) + 1)
    github.faults.append(Fault(403, '{"message": "API rate limit exceeded"}',
                               {k: v.format(soon=soon) for k, v in headers.items()},
                               "/repos/acme/handbook/git/trees"))
    started = time.monotonic()
    docs = await documents(github)
    assert len(docs) == 8 and time.monotonic() - started >= 0.9


async def test_issues_when_chosen(github: FakeGitHub) -> None:
    handbook = github.repos["acme/handbook"]
    url = f"{github.url}/acme/handbook"
    handbook.issues[7] = issue(7, "Printer jams", "Tray 2 jams.", url, comments=1,
                               labels=("printer",))
    handbook.comments[7] = [comment("Replace the roller.")]
    handbook.issues[8] = {**issue(8, "A pull request", "diff", url), "pull_request": {
        "url": f"{url}/pulls/8"}}
    docs = await documents(github, issues=True, repos=["acme/handbook"])
    printer = docs["acme/handbook#issue-7"]
    assert "Tray 2 jams." in printer.body and "Replace the roller." in printer.body
    assert printer.tags == ("closed", "printer") and "acme/handbook#issue-8" not in docs


async def test_fetch_reads_named_items(github: FakeGitHub) -> None:
    github.commit("acme/handbook", {"docs/old.md": None})
    ids = ["acme/handbook:docs/vpn.md", "acme/handbook:docs/old.md",
           "acme/handbook:src/main.py", "acme/handbook#discussion-1",
           "acme/handbook#discussion-9", "acme/other:README.md", "garbage",
           "acme/handbook:docs/../../../orgs/acme/x.md"]
    found = [d async for d in connector(github).fetch(ids)]
    assert isinstance(found[0], SourceDocument) and found[0].title == "VPN setup"
    assert isinstance(found[3], SourceDocument) and "IT-7" in found[3].body
    assert [f for i, f in enumerate(found) if i not in (0, 3)] == [
        DocumentGone(i) for i in ids if i not in (ids[0], ids[3])]
    assert not any(isinstance(f, DocumentFailure) for f in found)


def test_enterprise_server_graphql_sits_beside_the_rest_api() -> None:
    settings = GitHubSettings(repos=["acme/handbook"])
    ghes = GitHubConnector(SourceConfig("x", url="https://ghe.acme.com/api/v3", token="t"),
                           settings)
    dotcom = GitHubConnector(SourceConfig("x", token="t"), settings)
    assert ghes._graphql() == "https://ghe.acme.com/api/graphql"
    assert dotcom._graphql() == "https://api.github.com/graphql"


async def test_a_wiki_is_cloned_with_the_token_and_read(github: FakeGitHub) -> None:
    github.wikis.write("acme/handbook", {"Home.md": "Welcome to the handbook wiki.",
                                         "Onboarding-Guide.md": "# Day one\n\nGet a badge.",
                                         "Diagram.png": "not a page"})
    docs = await documents(github, wiki=True, discussions=False, repos=["acme/handbook",
                                                                       "acme/platform"])
    home = docs["acme/handbook.wiki:Home.md"]
    assert home.title == "Home" and home.url == f"{github.url}/acme/handbook/wiki/Home"
    assert home.access == ("public",) and home.tags == ("handbook", "wiki")
    guide = docs["acme/handbook.wiki:Onboarding-Guide.md"]
    assert guide.title == "Onboarding Guide" and "Get a badge." in guide.body
    assert not any(d.endswith(".png") for d in docs)
    assert not any(d.startswith("acme/platform.wiki") for d in docs)  # no pages yet: none
    index, state = MemoryIndex(), MemorySyncState()
    conn = {"wiki": True, "discussions": False, "repos": ["acme/handbook"]}
    await job(github, index, state, **conn).run(full=True)
    github.wikis.write("acme/handbook", {"Home.md": "Welcome back.", "Onboarding-Guide.md": None})
    changed = await job(github, index, state, **conn).run()
    assert (changed.counts.updated, changed.counts.deleted) == (1, 1)


async def test_a_wiki_clone_refused_is_one_sentence_without_the_token(
        github: FakeGitHub, caplog: pytest.LogCaptureFixture) -> None:
    github.wikis.write("acme/handbook", {"Home.md": "Welcome."})
    github.wikis.refuse = True  # the API takes the token, git over HTTPS does not
    with pytest.raises(SyncError) as caught:
        await job(github, MemoryIndex(), MemorySyncState(), wiki=True,
                  repos=["acme/handbook"]).run(full=True)
    message = caught.value.user_message
    assert message.startswith(f"Source 'code' (GitHub): the wiki of {github.url}/acme/handbook "
                              "could not be cloned (")
    assert TOKEN not in message and TOKEN not in caplog.text


class TestGitHubContract(ConnectorContract):
    kind = "github"

    @pytest.fixture
    def rig(self, github: FakeGitHub) -> Rig:
        def remove() -> str:
            github.commit("acme/handbook", {"docs/old.md": None})
            return "acme/handbook:docs/old.md"

        return Rig(
            SourceConfig(SOURCE, url=github.url, token=TOKEN),
            {"repos": REPOS, "backoff_s": 0.01, "max_wait_s": 3.0},
            frozenset({"acme/handbook:README.md", "acme/handbook:docs/vpn.md",
                       "acme/handbook:docs/old.md", "acme/handbook#discussion-1",
                       "acme/handbook#discussion-2", "acme/platform:README.md",
                       "acme/intranet:README.md", "acme/secret:README.md"}),
            {"acme/handbook:docs/vpn.md": Seen(
                "VPN setup", f"{github.url}/acme/handbook/blob/main/docs/vpn.md",
                "Step 0 of the vpn procedure")},
            public="acme/handbook:docs/vpn.md", restricted=("acme/platform:README.md", frozenset(
                {"github:team:acme/platform", "github:user:mona"})),
            remove=remove,
            bad_credential=Trouble(("Source 'code' (GitHub) answered HTTP 401", "`token`"),
                                 source={"token": "github_pat_revoked"},
                                 secret="github_pat_revoked"),
            unreadable=Trouble(("acme/handbook/docs/binary.md", "no other text encoding"),
                             apply=lambda: github.commit("acme/handbook", {
                                 "docs/binary.md": b"\x00\x81\x8d\x8f\x90\x9d\xff\xfe" * 50})),
            known_groups=KNOWN)
