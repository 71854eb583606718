"""The answers loop's console pages: document health (Documents → review dates: verified,
due and expired, restricted titles masked for viewers, an admin's keep with CSRF, role and
audit) and the help channels' deflection on the overview, with and without Sift."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select, update

from bot.admin.routes import mount
from bot.chat.deflection import BY_PERSON, BY_SIFT, HOLDOUT, SIFT
from bot.settings import Settings
from rag.embed import LocalEmbedder
from storage.columns import utc_now
from storage.db import Database
from storage.models import AuditEntry, SourceDocument
from storage.outcomes import HelpOutcomes
from storage.sync_state import SyncStateRepository
from tests.admin.conftest import ADMIN_PW, VIEWER_PW, csrf_of


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    yield database
    database.dispose()


@pytest.fixture
async def client(tmp_path: Path, embedder: LocalEmbedder,
                 db: Database) -> AsyncIterator[TestClient]:
    db.upgrade()
    state, now = SyncStateRepository(db), utc_now()
    for doc_id, age in (("old.md", 100), ("soon.md", 20), ("fresh.md", 1), ("secret.md", 200)):
        state.record_document("runbooks", doc_id, content_hash="h", chunk_count=1,
                              updated_at=now - timedelta(days=age))
    state.record_document("wiki", "unreviewed.md", content_hash="h", chunk_count=1,
                          updated_at=now - timedelta(days=999))
    with db.write() as session:
        session.execute(update(SourceDocument).where(SourceDocument.doc_id == "secret.md")
                        .values(restricted=True))
    settings = Settings(data_dir=tmp_path / "data", admin={
        "password": ADMIN_PW, "viewer_password": VIEWER_PW}, sources=[
        {"name": "runbooks", "kind": "folder", "path": str(tmp_path), "review_days": 30,
         "interval_minutes": None, "full_cron": ""},
        {"name": "wiki", "kind": "folder", "path": str(tmp_path), "interval_minutes": None,
         "full_cron": ""}])
    root = web.Application()
    assert mount(root, db, settings, embedder, None) is not None
    async with TestClient(TestServer(root)) as test_client:
        yield test_client


async def sign_in(client: TestClient, password: str) -> None:
    token = csrf_of(await (await client.get("/admin/login")).text())
    response = await client.post("/admin/login", allow_redirects=False, data={
        "csrf": token, "password": password, "next": "/admin/"})
    assert response.status == 303


def row(html: str, doc_id: str) -> str:
    found = re.search(rf'<span class="hint">{re.escape(doc_id)}</span>.*?</tr>', html, re.S)
    assert found is not None, f"no row for {doc_id}"
    return found.group(0)


async def test_document_health_counts_and_lists_each_state(client: TestClient) -> None:
    await sign_in(client, ADMIN_PW)
    html = await (await client.get("/admin/documents?view=review")).text()
    assert ">1 verified<" in html and ">1 due<" in html and ">2 expired<" in html
    assert '<span class="badge expired">expired</span>' in row(html, "old.md")
    assert '<span class="badge due">due</span>' in row(html, "soon.md")
    assert '<span class="badge verified">verified</span>' in row(html, "fresh.md")
    assert "unreviewed.md" not in html  # its source has no review_days
    # Soonest due first: the expired ones above the due one above the verified one.
    assert html.index("secret.md") < html.index("old.md") < html.index("soon.md") < \
        html.index("fresh.md")
    assert "keep</button>" in row(html, "old.md") and "keep</button>" not in row(html, "fresh.md")


async def test_a_viewer_sees_restricted_rows_masked_and_cannot_keep(client: TestClient) -> None:
    await sign_in(client, VIEWER_PW)
    html = await (await client.get("/admin/documents?view=review")).text()
    assert "secret.md" not in html and "(restricted)" in html
    assert "keep</button>" not in html
    token = csrf_of(html)
    refused = await client.post("/admin/documents/verify", allow_redirects=False, data={
        "csrf": token, "source": "runbooks", "doc_id": "old.md"})
    assert refused.status == 403


async def test_an_admins_keep_verifies_it_and_is_audited(client: TestClient,
                                                         db: Database) -> None:
    await sign_in(client, ADMIN_PW)
    token = csrf_of(await (await client.get("/admin/documents?view=review")).text())
    forged = await client.post("/admin/documents/verify", allow_redirects=False, data={
        "csrf": "not-the-token", "source": "runbooks", "doc_id": "old.md"})
    assert forged.status == 403
    unknown = await client.post("/admin/documents/verify", allow_redirects=False, data={
        "csrf": token, "source": "wiki", "doc_id": "unreviewed.md"})
    assert unknown.status == 400
    kept = await client.post("/admin/documents/verify", data={
        "csrf": token, "source": "runbooks", "doc_id": "old.md"})
    html = await kept.text()
    assert 'role="status">old.md: verified.</p>' in html
    assert '<span class="badge verified">verified</span>' in row(html, "old.md")
    assert "by console" in row(html, "old.md")
    with db.read() as session:
        entries = [(a.action, a.target) for a in session.scalars(select(AuditEntry))]
    assert ("document_verified", "runbooks:old.md") in entries


async def test_the_overview_shows_both_arms_of_the_help_channels(client: TestClient,
                                                                 db: Database) -> None:
    outcomes, now = HelpOutcomes(db), utc_now()
    # With Sift: 3 of 4 resolved (2 by Sift, 1 by a person); the holdout: 1 of 3, by a person.
    for n, (arm, by) in enumerate([(SIFT, BY_SIFT), (SIFT, BY_SIFT), (SIFT, BY_PERSON),
                                   (SIFT, ""), (HOLDOUT, BY_PERSON), (HOLDOUT, ""),
                                   (HOLDOUT, "")]):
        outcomes.asked("slack", "C0HELPDESK", f"9.{n}", "U0ASKER1", arm,
                       at=now - timedelta(days=1))
        if by:
            outcomes.resolved("slack", "C0HELPDESK", f"9.{n}", by, "U0ASKER1")
    await sign_in(client, VIEWER_PW)
    html = await (await client.get("/admin/?window=7d")).text()
    section = html[html.index('id="deflection"'):]
    rows = re.findall(r"<tr><td>(with Sift|without \(holdout\))</td>((?:<td[^>]*>[^<]*</td>)+)",
                      section)
    cells = {arm: re.findall(r">([^<]*)</td>", tds) for arm, tds in rows}
    assert cells["with Sift"][:5] == ["4", "2", "1", "1", "75% (30–95%)"]
    assert cells["without (holdout)"][:5] == ["3", "0", "1", "2", "33% (6–79%)"]
    assert "C0HELPDESK" in section  # the week-and-channel table
