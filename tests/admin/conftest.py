"""The console over a seeded SQLite database, the real embedder and a real sync scheduler."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import delete, insert, update

from bot.admin.gaps import INDEXER
from bot.admin.routes import mount
from bot.settings import Settings
from rag.embed import LocalEmbedder
from storage.db import Database
from storage.models import (
    DocumentStats,
    EventKey,
    Feedback,
    Interaction,
    InteractionSource,
    SourceDocument,
    SyncRun,
)
from storage.rollup import rebuild
from storage.sync_state import SyncStateRepository
from sync.connectors.folder import FolderConnector
from sync.runner import SyncRunner, SyncSource
from sync.schedule import SourceSchedule, SyncScheduler
from tests.admin.seed import NOW, SCRIPT, seed, source_doc, sync_run
from tests.fakes.memory_index import MemoryIndex

ADMIN_PW, VIEWER_PW = "correct horse battery staple", "viewer only please"
SCRIPT_ID = 10_000
SECRET_DOC = "d22"  # a candidate of question 21

# Ticks are aligned to the clock (replicas share them): a daily interval fires at 00:00 UTC
# only, where an hourly one could sync behind a test's back whenever a run crossed the hour.
DAILY = 1440


def seed_hostile(db: Database) -> None:
    """One question, answer, document title, vote comment and sync error carrying markup."""
    with db.write() as session:
        session.execute(insert(Interaction), [{
            "id": SCRIPT_ID, "created_at": NOW, "platform": "slack", "channel": SCRIPT,
            "question": f"Why {SCRIPT}?", "answer": f"Because {SCRIPT} [1]",
            "status": "no_answer", "mode": "fast", "timings_ms": {"total": 5}, "usage": {},
            "models": {}}])
        session.execute(insert(InteractionSource), [{
            "interaction_id": SCRIPT_ID, "rank": 0, "chunk_id": "evil#0", "doc_id": "evil",
            "title": f"Title {SCRIPT}", "url": "javascript:alert(1)", "retrieval_score": 0.5,
            "grade_score": 0.1, "grade_reason": f"reason {SCRIPT}", "grade_source": "heuristic",
            "selected": False, "cited": True}])
        session.execute(insert(Feedback), [{
            "interaction_id": SCRIPT_ID, "user_id": "U9", "vote": -1, "channel": "button",
            "comment": f"comment {SCRIPT}", "created_at": NOW, "updated_at": NOW}])
        session.execute(insert(DocumentStats), [{
            "doc_id": "evil", "title": f"Title {SCRIPT}", "url": "javascript:alert(1)",
            "retrieved": 99, "graded": 99, "graded_relevant": 0, "grade_score_sum": 1.0,
            "model_graded": 99, "model_grade_sum": 1.0, "selected": 0, "cited": 9,
            "thumbs_up": 0, "thumbs_down": 5, "first_seen": NOW, "last_seen": NOW}])
        failing = {**source_doc(0, NOW), "doc_id": "evil", "status": "failed",
                   "error": f"the page answered {SCRIPT}"}
        session.execute(insert(SourceDocument), [failing])
        older = {**sync_run(5, NOW), "status": "partial", "errors": [f"evil: {SCRIPT}"]}
        session.execute(insert(SyncRun), [older])
    with db.write() as session:  # one document only some people may read
        session.execute(update(DocumentStats).where(DocumentStats.doc_id == SECRET_DOC)
                        .values(restricted=True, title="Layoff plan 2027"))
        rebuild(session.connection())


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    path = tmp_path_factory.mktemp("console") / "sift.db"
    db = Database(f"sqlite:///{path}")
    db.upgrade()
    seed(db, 600, days=20, docs=40, now=NOW)
    seed_hostile(db)
    yield db
    db.dispose()


def forget_sign_ins(db: Database) -> None:
    """Sessions and failed sign-ins live in the database, which a module's tests share."""
    with db.write() as session:
        session.execute(delete(EventKey))


@dataclass
class Console:
    client: TestClient
    app: web.Application  # the console's sub-application
    db: Database
    settings: Settings
    scheduler: SyncScheduler

    async def sign_in(self, password: str = ADMIN_PW, next_: str = "/admin/") -> web.Response:
        page = await self.client.get("/admin/login")
        token = csrf_of(await page.text())
        return await self.client.post("/admin/login", allow_redirects=False, data={
            "csrf": token, "password": password, "next": next_})

    async def csrf(self, path: str = "/admin/sources") -> str:
        return csrf_of(await (await self.client.get(path)).text())


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, "the page has no CSRF field"
    return found.group(1)


def write_eval_report(data_dir: Path, name: str = "handbook") -> None:
    folder = data_dir / "eval" / name
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps({
        "dataset": f"{name} {SCRIPT}", "queries": 12, "started_at": "2026-11-20T10:00:00",
        "modes": {"hybrid": {"recall@10": 0.8, "ndcg@10": 0.61, "mrr@10": 0.5},
                  "graded": {"recall@10": 0.85, "ndcg@10": 0.7, "mrr@10": 0.6}},
        "answers": None}))
    _draw_chart(folder / "report.png")


def _draw_chart(path: Path) -> None:
    """A real PNG in place of the one `sift eval` draws, so a browser can show it."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3), dpi=80)
    for mode, curve in (("hybrid", [0.4, 0.6, 0.7, 0.8]), ("graded", [0.5, 0.7, 0.8, 0.85])):
        ax.plot(range(1, 5), curve, marker=".", label=mode)
    ax.set(xlabel="k", ylabel="recall@k", ylim=(0, 1))
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


@pytest.fixture
async def console(seeded: Database, embedder: LocalEmbedder,
                  tmp_path: Path) -> AsyncIterator[Console]:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "vpn.md").write_text("# VPN on Linux\n\nInstall the client, then sign in.\n")
    write_eval_report(tmp_path / "data")
    settings = Settings(data_dir=tmp_path / "data", admin={
        "password": ADMIN_PW, "viewer_password": VIEWER_PW},
        sources=[{"name": "handbook", "kind": "folder", "path": str(kb),
                  "interval_minutes": DAILY, "full_cron": ""},
                 # Configured, with runs that found nothing to index (seeded per test).
                 {"name": "wiki", "kind": "folder", "path": str(kb),
                  "interval_minutes": DAILY, "full_cron": ""}])
    forget_sign_ins(seeded)  # each test starts with no session and no failed sign-in
    runner = SyncRunner([SyncSource("handbook", FolderConnector(kb))], MemoryIndex(),
                        embedder, SyncStateRepository(seeded), tmp_path / "locks")
    scheduler = SyncScheduler(runner, [SourceSchedule("handbook", DAILY, "", "")],
                              sync_on_start=False)
    root = web.Application()
    sub = mount(root, seeded, settings, embedder, scheduler)
    assert sub is not None
    scheduler.start()
    async with TestClient(TestServer(root)) as client:
        await sub[INDEXER].catch_up()  # as a server that has run a while has
        yield Console(client, sub, seeded, settings, scheduler)
    await scheduler.stop()
