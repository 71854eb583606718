"""`sift sync` as a process against fake Jira, GitHub and ServiceNow: real Weaviate, the
access each platform grants stored on the chunks, bad input named while the rest syncs."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import weaviate
from weaviate.classes.init import Auth

from tests.conftest import unique_collection
from tests.fakes.github_server import TOKEN as GITHUB_TOKEN
from tests.fakes.github_server import FakeDiscussion, FakeGitHub
from tests.fakes.jira_server import EMAIL, TOKEN, FakeIssue, FakeJira, adf, grant
from tests.fakes.servicenow_server import PASSWORD, USER, FakeServiceNow
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from bot.cli import main; sys.exit(main(sys.argv[1:]))"
PROSE = "Rotate the signing keys every quarter and record the rotation in the audit log."


class Platforms:
    """The three fakes, one sift.toml naming them, and `sift sync --json` runs."""

    def __init__(self, root: Path, server: ManagedWeaviate) -> None:
        self.root, self.server = root, server
        self.jira, self.github, self.snow = FakeJira(), FakeGitHub(), FakeServiceNow()
        self.collection = unique_collection("CodePlatforms")
        self.jira.schemes["IT"] = [grant("group", "it-staff")]
        for i in range(1, 4):
            self.jira.put(FakeIssue(f"IT-{i}", f"Keys {i}", adf(f"{PROSE} Ticket {i}.")))
        self.jira.put(FakeIssue("IT-4", "Secret", adf(PROSE), security="10021"))
        repo = self.github.repo("acme/handbook", {
            "README.md": f"# Handbook\n\n{PROSE}", "docs/keys.md": f"# Keys\n\n{PROSE}"})
        repo.discussions[1] = FakeDiscussion(1, "Who rotates keys?", PROSE, answer="Security.")
        self.github.repo("acme/platform", {"README.md": f"# Platform\n\n{PROSE}"},
                         visibility="private", teams=["platform"])
        it = self.snow.base("IT")
        desk = self.snow.record("sys_user_group", "desk", name="Service Desk")
        agents = self.snow.criterion("Agents", group=desk)
        self.snow.article("KB0001", "Keys", f"<p>{PROSE}</p>", it)
        self.snow.article("KB0002", "Desk keys", f"<p>{PROSE} Desk.</p>", it, can=agents)

    async def start(self) -> None:
        for fake in (self.jira, self.github, self.snow):
            await fake.start()
        self.config = self.root / "sift.toml"
        self.write()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SIFT_")} | {
            "SIFT_CONFIG": str(self.config), "SIFT_DATA_DIR": str(self.root / "data"),
            "SIFT_DATABASE_URL": f"sqlite:///{self.root / 'sift.db'}",
            "SIFT_WEAVIATE_URL": self.server.url, "SIFT_WEAVIATE_API_KEY": self.server.api_key,
            "SIFT_WEAVIATE__GRPC_URL": f"127.0.0.1:{self.server.ports.grpc}",
            "SIFT_WEAVIATE__COLLECTION": self.collection, "SIFT_LOG_LEVEL": "WARNING"}

    def write(self, jira_token: str = TOKEN, repos: str = '"acme/handbook", "acme/platform"',
              bases: str = '"IT"') -> None:
        self.config.write_text(
            f'[[sources]]\nname = "tickets"\nkind = "jira"\nurl = "{self.jira.url}"\n'
            f'token = "{jira_token}"\n[sources.jira]\nemail = "{EMAIL}"\nprojects = ["IT"]\n\n'
            f'[[sources]]\nname = "code"\nkind = "github"\nurl = "{self.github.url}"\n'
            f'token = "{GITHUB_TOKEN}"\n[sources.github]\nrepos = [{repos}]\n\n'
            f'[[sources]]\nname = "kb"\nkind = "servicenow"\nurl = "{self.snow.url}"\n'
            f'token = "{PASSWORD}"\n[sources.servicenow]\nusername = "{USER}"\n'
            f'bases = [{bases}]\n\n'
            '[[groups]]\nname = "it"\njira_groups = ["it-staff"]\ngithub_teams = '
            '["acme/platform"]\nservicenow_groups = ["Service Desk"]\n'
            'principals = ["jira:level:10021", "servicenow:base:IT"]\n', encoding="utf-8")

    async def stop(self) -> None:
        for fake in (self.jira, self.github, self.snow):
            await fake.stop()
        with self._client() as client:
            client.collections.delete(self.collection)

    def _client(self) -> weaviate.WeaviateClient:
        return weaviate.connect_to_custom(
            http_host="127.0.0.1", http_port=self.server.ports.http, http_secure=False,
            grpc_host="127.0.0.1", grpc_port=self.server.ports.grpc, grpc_secure=False,
            auth_credentials=Auth.api_key(self.server.api_key))

    def access(self, source: str) -> dict[str, list[str]]:
        """Each indexed document of `source` with the access groups stored on its chunks."""
        with self._client() as client:
            chunks = client.collections.get(self.collection).iterator()
            return {str(c.properties["doc_id"]): sorted(c.properties["access"])  # type: ignore[arg-type]
                    for c in chunks if c.properties["source"] == source}

    async def sync(self, *args: str, ok: bool = True) -> tuple[dict[str, dict[str, object]], str]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CLI, "sync", "--json", *args, env=self.env, cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), 300)
        assert (process.returncode == 0) is ok, err.decode()
        rows = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
        return {str(row["source"]): row for row in rows}, err.decode()


@pytest.fixture
async def platforms(tmp_path: Path,
                    weaviate_server: ManagedWeaviate) -> AsyncIterator[Platforms]:
    made = Platforms(tmp_path, weaviate_server)
    await made.start()
    yield made
    await made.stop()


async def test_sift_sync_indexes_maps_access_updates_and_prunes(platforms: Platforms) -> None:
    first, _ = await platforms.sync()
    assert {name: row["added"] for name, row in first.items()} == {
        "tickets": 4, "code": 4, "kb": 2}
    assert platforms.access("tickets") == {"IT-1": ["jira:group:it-staff"],
                                           "IT-2": ["jira:group:it-staff"],
                                           "IT-3": ["jira:group:it-staff"],
                                           "IT-4": ["jira:level:10021"]}
    assert platforms.access("code") == {
        "acme/handbook:README.md": ["public"], "acme/handbook:docs/keys.md": ["public"],
        "acme/handbook#discussion-1": ["public"],
        "acme/platform:README.md": ["github:team:acme/platform"]}
    assert platforms.access("kb") == {"KB0001": ["servicenow:base:IT"],
                                      "KB0002": ["servicenow:group:Service Desk"]}
    again, _ = await platforms.sync()
    assert all(row["added"] == row["updated"] == row["chunks_written"] == 0
               for row in again.values())
    platforms.jira.change("IT-2", description=adf("Keys now rotate monthly."))
    del platforms.jira.issues["IT-3"]
    platforms.github.commit("acme/handbook", {"docs/keys.md": "# Keys\n\nMonthly now.",
                                              "README.md": None})
    platforms.snow.change("KB0001", text="<p>Keys rotate monthly.</p>")
    platforms.snow.change("KB0002", workflow_state="retired")
    changed, _ = await platforms.sync()
    assert {n: (r["updated"], r["deleted"]) for n, r in changed.items()} == {
        "tickets": (1, 1), "code": (1, 1), "kb": (1, 1)}
    assert set(platforms.access("code")) == {"acme/handbook:docs/keys.md",
                                             "acme/handbook#discussion-1",
                                             "acme/platform:README.md"}


async def test_bad_input_is_named_and_the_rest_syncs(platforms: Platforms) -> None:
    platforms.write(jira_token="revoked", repos='"acme/handbook", "acme/nowhere"',
                    bases='"IT", "Fasilities"')
    rows, err = await platforms.sync(ok=False)
    assert "Source 'tickets' (Jira) answered HTTP 401" in err and "revoked" not in err
    assert set(rows) == {"code", "kb"} and rows["code"]["added"] == 3
    assert rows["kb"]["added"] == 2 and rows["code"]["failed"] == rows["kb"]["failed"] == 1
    assert "repository acme/nowhere: not found, or the token may not read it" in err
    assert "knowledge base 'Fasilities': not found, or the account may not read it" in err
    assert platforms.access("tickets") == {}  # nothing half-written
