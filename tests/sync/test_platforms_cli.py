"""`sift sync` as a process against fake Confluence, Notion, Zendesk and a website: real
Weaviate."""

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
from tests.fakes.confluence_server import EMAIL, TOKEN, FakeConfluence, FakePage
from tests.fakes.notion_server import SECRET, FakeNotion, NotionPage, block, text
from tests.fakes.web_site import FakeSite, SitePage
from tests.fakes.zendesk_server import EMAIL as ZENDESK_EMAIL
from tests.fakes.zendesk_server import TOKEN as ZENDESK_TOKEN
from tests.fakes.zendesk_server import FakeArticle, FakeZendesk
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from bot.cli import main; sys.exit(main(sys.argv[1:]))"
PROSE = "Rotate the signing keys every quarter and record the rotation in the audit log."


class Platforms:
    """The four fakes, one sift.toml naming them, and `sift sync --json` runs."""

    def __init__(self, root: Path, server: ManagedWeaviate) -> None:
        self.root, self.server = root, server
        self.wiki, self.notion, self.site = FakeConfluence(), FakeNotion(), FakeSite()
        self.help = FakeZendesk()
        self.help.categories, self.help.sections = {1: "Security"}, {10: ("Keys", 1)}
        self.collection = unique_collection("Platforms")
        for i in range(3):
            self.wiki.put(FakePage(f"10{i}", "ENG", f"Keys {i}", f"<p>{PROSE} ({i})</p>"))
            self.notion.pages[f"n{i}"] = NotionPage(f"n{i}", f"Note {i}", [block(
                f"b{i}", "paragraph", rich_text=text(f"{PROSE} Note {i}."))])
            self.site.pages[f"/docs/p{i}"] = SitePage(f"Page {i}", f"{PROSE} Page {i}.")
            self.help.put(FakeArticle(i + 1, 10, f"Article {i}", f"<p>{PROSE} Article {i}.</p>",
                                      user_segment_id=77 if i == 0 else None))
        self.help.put(FakeArticle(9, 10, "Draft", f"<p>{PROSE}</p>", draft=True))

    async def start(self) -> None:
        for fake in (self.wiki, self.notion, self.site, self.help):
            await fake.start()
        config = self.root / "sift.toml"
        config.write_text(
            f'[[sources]]\nname = "wiki"\nkind = "confluence"\nurl = "{self.wiki.url}/wiki"\n'
            f'token = "{TOKEN}"\n[sources.confluence]\nemail = "{EMAIL}"\nspaces = ["ENG"]\n\n'
            f'[[sources]]\nname = "notes"\nkind = "notion"\nurl = "{self.notion.url}"\n'
            f'token = "{SECRET}"\n[sources.notion]\nrequests_per_second = 100\n\n'
            f'[[sources]]\nname = "docs"\nkind = "web"\nurl = "{self.site.url}/sitemap.xml"\n'
            f'[sources.web]\nprefix = "{self.site.url}/docs/"\ndelay_s = 0\n\n'
            f'[[sources]]\nname = "help"\nkind = "zendesk"\nurl = "{self.help.url}"\n'
            f'token = "{ZENDESK_TOKEN}"\n[sources.zendesk]\nemail = "{ZENDESK_EMAIL}"\n\n'
            '[[groups]]\nname = "agents"\nprincipals = ["zendesk:segment:77"]\n',
            encoding="utf-8")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SIFT_")} | {
            "SIFT_CONFIG": str(config), "SIFT_DATA_DIR": str(self.root / "data"),
            "SIFT_DATABASE_URL": f"sqlite:///{self.root / 'sift.db'}",
            "SIFT_WEAVIATE_URL": self.server.url, "SIFT_WEAVIATE_API_KEY": self.server.api_key,
            "SIFT_WEAVIATE__GRPC_URL": f"127.0.0.1:{self.server.ports.grpc}",
            "SIFT_WEAVIATE__COLLECTION": self.collection, "SIFT_LOG_LEVEL": "WARNING"}

    async def stop(self) -> None:
        for fake in (self.wiki, self.notion, self.site, self.help):
            await fake.stop()
        with weaviate.connect_to_custom(
                http_host="127.0.0.1", http_port=self.server.ports.http, http_secure=False,
                grpc_host="127.0.0.1", grpc_port=self.server.ports.grpc, grpc_secure=False,
                auth_credentials=Auth.api_key(self.server.api_key)) as client:
            client.collections.delete(self.collection)

    def access(self, source: str) -> dict[str, list[str]]:
        """Each indexed document of `source` with the access groups stored on its chunks."""
        with weaviate.connect_to_custom(
                http_host="127.0.0.1", http_port=self.server.ports.http, http_secure=False,
                grpc_host="127.0.0.1", grpc_port=self.server.ports.grpc, grpc_secure=False,
                auth_credentials=Auth.api_key(self.server.api_key)) as client:
            chunks = client.collections.get(self.collection).iterator()
            return {str(c.properties["doc_id"]): sorted(c.properties["access"])  # type: ignore[arg-type]
                    for c in chunks if c.properties["source"] == source}

    async def sync(self, *args: str) -> dict[str, dict[str, object]]:
        """One `sift sync --json` process; the fakes keep serving from this event loop."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CLI, "sync", "--json", *args, env=self.env, cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), 300)
        assert process.returncode == 0, err.decode()
        rows = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
        return {str(row["source"]): row for row in rows}


@pytest.fixture
async def platforms(tmp_path: Path,
                    weaviate_server: ManagedWeaviate) -> AsyncIterator[Platforms]:
    made = Platforms(tmp_path, weaviate_server)
    await made.start()
    yield made
    await made.stop()


async def test_sift_sync_indexes_updates_and_prunes_every_platform(platforms: Platforms) -> None:
    first = await platforms.sync()
    assert {name: row["added"] for name, row in first.items()} == {
        "wiki": 3, "notes": 3, "docs": 3, "help": 3}  # the Zendesk draft is left out
    assert platforms.access("help") == {"1": ["zendesk:segment:77"], "2": ["public"],
                                        "3": ["public"]}
    again = await platforms.sync()
    assert all(row["added"] == row["updated"] == row["chunks_written"] == 0
               for row in again.values())
    platforms.wiki.put(FakePage("101", "ENG", "Keys 1", "<p>Rotated monthly now.</p>",
                                updated="2099-01-01T00:00:00.000Z"))
    del platforms.notion.pages["n2"]
    del platforms.site.pages["/docs/p0"]
    platforms.help.change(2, body="<p>Keys now rotate monthly.</p>")
    platforms.help.delete(3)
    changed = await platforms.sync()
    assert (changed["wiki"]["updated"], changed["docs"]["deleted"]) == (1, 1)
    assert (changed["help"]["updated"], changed["help"]["deleted"]) == (1, 0)
    full = await platforms.sync("--full")
    assert (full["notes"]["deleted"], full["notes"]["unchanged"]) == (1, 2)
    assert (full["help"]["deleted"], full["help"]["unchanged"]) == (1, 2)
    assert set(platforms.access("help")) == {"1", "2"}
