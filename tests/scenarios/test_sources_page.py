"""The console's Sources page through `sift serve`, after a real sync of a folder with 269
failing documents (40 of them with broken YAML front matter) and 10 indexed with a misspelt
`access`: every one of them is listed, page after page, with what was wrong."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from pydantic import SecretStr

from bot.app import App
from bot.settings import AdminSettings, SyncSettings
from rag.embed import LocalEmbedder
from storage.models import SyncRun
from tests.admin.conftest import csrf_of
from tests.fakes.anthropic_server import FakeAnthropic
from tests.scenarios.stack import ServedSift, settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = pytest.mark.weaviate

PASSWORD = "a long console password"
UNREADABLE, BROKEN, MISSPELT = 229, 40, 10


def write_folder(kb: Path) -> None:
    kb.mkdir()
    (kb / "vpn.md").write_text("# VPN\n\nConnect with the company client, then sign in.\n")
    for n in range(UNREADABLE):  # not text in any encoding (a Latin-1 file would be read)
        (kb / f"export-{n:03d}.txt").write_bytes(b"\x00\x81\x8d\x8f\x90\x9d\xff\xfe" * 50)
    for n in range(BROKEN):  # named to sort after everything else, as in the report
        (kb / f"zz-policy-{n:02d}.md").write_text(
            f"---\ntitle: [Policy {n}\naccess: public\n---\n# Policy {n}\n\nBody.\n")
    for n in range(MISSPELT):
        (kb / f"hr-{n:02d}.md").write_text(
            f"---\ntitle: HR {n}\nacess: hr\n---\n# HR {n}\n\nWho approves leave.\n")


@pytest.fixture
async def synced(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,
                 embedder: LocalEmbedder, fake_anthropic: FakeAnthropic
                 ) -> AsyncIterator[ServedSift]:
    write_folder(tmp_path / "kb")
    settings = settings_for(
        tmp_path, weaviate_server, corpus, fake_anthropic,
        sources=[{"name": "handbook", "kind": "folder", "path": str(tmp_path / "kb")}],
        sync=SyncSettings(sync_on_start=True), admin=AdminSettings(password=SecretStr(PASSWORD)))
    app = App(settings)
    app.__dict__["embedder"] = embedder
    sift = ServedSift(app)
    await sift.start()
    for _ in range(600):  # the start-up sync, in the background
        runs = await asyncio.to_thread(sift.rows, SyncRun)
        if runs and runs[-1].status != "running":
            break
        await asyncio.sleep(0.1)
    assert runs[-1].status == "ok" and runs[-1].failed == UNREADABLE + BROKEN, runs[-1].errors
    yield sift
    await sift.stop()


async def signed_in(session: aiohttp.ClientSession, base: str) -> None:
    async with session.get(base + "/admin/login") as page:
        token = csrf_of(await page.text())
    async with session.post(base + "/admin/login", allow_redirects=False, data={
            "csrf": token, "password": PASSWORD, "next": "/admin/"}) as response:
        assert response.status == 303


ROW = re.compile(r"<tr><td>([^<]+)</td><td><span class=\"status (\w+)\">[^<]*</span></td>"
                 r"<td>([^<]*)</td>")


async def test_every_failing_and_warned_document_is_listed_page_by_page(
        synced: ServedSift) -> None:
    base = synced.base_url
    listed: dict[str, tuple[str, str]] = {}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        await signed_in(session, base)
        async with session.get(base + "/admin/sources") as response:
            page = await response.text()
        assert f"{UNREADABLE + BROKEN} failing, {MISSPELT} with a warning" in page
        link = re.search(r'<a href="(/admin/sources/handbook/documents)">All 279 of them</a>',
                         page)
        assert link is not None, page
        url, pages = base + link.group(1), 0
        while url:
            async with session.get(url) as response:
                assert response.status == 200
                page = await response.text()
            pages += 1
            rows = ROW.findall(page)
            assert rows and len(rows) <= 100
            for doc_id, status, problem in rows:
                assert doc_id not in listed  # no document twice across pages
                listed[html.unescape(doc_id)] = (status, html.unescape(problem))
            more = re.search(r'<a rel="next" href="([^"]+)">Next page</a>', page)
            url = base + html.unescape(more.group(1)) if more else ""
    assert pages == 3
    expected = ({f"export-{n:03d}.txt" for n in range(UNREADABLE)}
                | {f"zz-policy-{n:02d}.md" for n in range(BROKEN)}
                | {f"hr-{n:02d}.md" for n in range(MISSPELT)})
    assert set(listed) == expected
    broken = listed["zz-policy-39.md"]
    assert broken[0] == "failed" and "invalid YAML front matter" in broken[1]
    assert listed["export-000.txt"] == ("failed", "export-000.txt: not UTF-8 text (byte 1), and no "
                                           "other text encoding fits it")
    warned = listed["hr-07.md"]
    assert warned[0] == "warning" and "did you mean 'access'" in warned[1]


async def test_a_page_of_another_source_is_not_found(synced: ServedSift) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        await signed_in(session, synced.base_url)
        async with session.get(synced.base_url + "/admin/sources/other/documents") as gone:
            assert gone.status == 404
    async with aiohttp.ClientSession() as anonymous, anonymous.get(
            synced.base_url + "/admin/sources/handbook/documents",
            allow_redirects=False) as refused:
        assert refused.status == 303 and "/admin/login" in refused.headers["Location"]
