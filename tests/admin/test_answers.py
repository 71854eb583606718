"""The console's Answers page: pending drafts listed, approved with an edit in real Chromium
(indexed, audited), forms refused without CSRF or the admin role, restricted text hidden."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from selenium.webdriver.remote.webdriver import WebDriver

from bot.admin.answers import REVIEW
from bot.admin.routes import mount
from bot.answers.documents import SOURCE, AnswerSource
from bot.answers.review import AnswerReview, runner_index
from bot.settings import Settings
from rag.embed import LocalEmbedder
from storage.answers import AnswerDrafts, NewDraft
from storage.audit import AuditLog
from storage.db import Database
from storage.sync_state import SyncStateRepository
from sync.runner import SyncRunner, SyncSource
from tests.admin.conftest import ADMIN_PW, VIEWER_PW, Console, csrf_of, forget_sign_ins
from tests.admin.test_browser import sign_in
from tests.browser import run, shot, wait_for
from tests.fakes.memory_index import MemoryIndex

REPLY = "Badges come from the facilities desk on floor 2; bring your staff card."


def draft(ref: str, *, private: bool = False) -> NewDraft:
    return NewDraft(
        captured_by="reaction", platform="slack", workspace="T1", channel="C0HELP",
        channel_name="#vault" if private else "#it-help",
        channel_kind="private" if private else "public", thread="1764700000.000100",
        message_ref=ref, asker="U222", author="U0DANA", author_name="Dana",
        answered_at=datetime(2026, 12, 3, 9, 30, tzinfo=UTC),
        link="https://acme.slack.com/archives/C0HELP/p1764700300000200",
        question="How do I get a parking badge?", answer=REPLY, reply=REPLY,
        context="Ana: is it the front desk?",
        access=("slack:channel:C0HELP",) if private else ("public",))


@pytest.fixture
async def answers(seeded: Database, embedder: LocalEmbedder,
                  tmp_path: Path) -> AsyncIterator[tuple[Console, MemoryIndex]]:
    forget_sign_ins(seeded)
    settings = Settings(data_dir=tmp_path / "data",
                        admin={"password": ADMIN_PW, "viewer_password": VIEWER_PW})
    index = MemoryIndex()
    drafts = AnswerDrafts(seeded)
    runner = SyncRunner([], index, embedder, SyncStateRepository(seeded), tmp_path / "locks",
                        builtin=[SyncSource(SOURCE, AnswerSource(drafts))])
    root = web.Application()
    sub = mount(root, seeded, settings, embedder, None)
    assert sub is not None
    sub[REVIEW] = AnswerReview(drafts, AuditLog(seeded), runner_index(runner.run_ids))
    async with TestClient(TestServer(root)) as client:
        yield Console(client, sub, seeded, settings, None), index  # type: ignore[arg-type]


async def test_approve_after_an_edit_in_the_browser(
        browser: WebDriver, answers: tuple[Console, MemoryIndex]) -> None:
    console, index = answers
    stored, _ = AnswerDrafts(console.db).add(draft("1764700300.000201"))
    site = str(console.client.server.make_url("")).rstrip("/")
    rows = await sign_in(browser, site, "/admin/answers", "#answers tbody tr")
    assert "How do I get a parking badge?" in await run(lambda: rows[0].text)
    await run(browser.get, f"{site}/admin/answers/{stored.id}")
    (text,) = await wait_for(browser, "#answer-text")
    await run(text.clear)
    await run(text.send_keys, "Ask the facilities desk on floor 2 with your staff card.")
    await shot(browser, "admin", "answer")
    (button,) = await wait_for(browser, "#answer-approve")
    await run(button.click)
    (notice,) = await wait_for(browser, "#answers-done")
    assert await run(lambda: notice.text) == f"Answer {stored.id} approved."
    done = AnswerDrafts(console.db).get(stored.id)
    assert done is not None and done.status == "approved"
    assert done.answer == "Ask the facilities desk on floor 2 with your staff card."
    chunks = [c for c, _ in index.chunks.values() if c.doc_id == stored.doc_id]
    assert chunks and chunks[0].title == "Answered by Dana in #it-help, 3 Dec 2026"
    assert chunks[0].url == stored.link and chunks[0].access == ("public",)
    [event] = AuditLog(console.db).since(datetime(2026, 1, 1, tzinfo=UTC),
                                         action="answer_approved")
    assert event.target == f"answer {stored.id}" and event.actor == "admin"
    assert event.before is not None and event.before["answer"] == REPLY


async def test_forms_need_the_csrf_token_and_the_admin_role(
        answers: tuple[Console, MemoryIndex]) -> None:
    console, index = answers
    stored, _ = AnswerDrafts(console.db).add(draft("1764700300.000202"))
    await console.sign_in()
    forged = await console.client.post(f"/admin/answers/{stored.id}/approve",
                                       data={"question": "q", "answer": "a"},
                                       allow_redirects=False)
    assert forged.status == 403
    forget_sign_ins(console.db)
    console.client.session.cookie_jar.clear()
    await console.sign_in(VIEWER_PW)
    token = await console.csrf(f"/admin/answers/{stored.id}")
    viewer = await console.client.post(f"/admin/answers/{stored.id}/reject",
                                       data={"csrf": token, "reason": "no"},
                                       allow_redirects=False)
    assert viewer.status == 403
    found = AnswerDrafts(console.db).get(stored.id)
    assert found is not None and found.status == "pending" and not index.chunks


async def test_reject_needs_a_reason_and_viewers_never_read_a_private_draft(
        answers: tuple[Console, MemoryIndex]) -> None:
    console, _ = answers
    secret, _ = AnswerDrafts(console.db).add(draft("1764700300.000203", private=True))
    await console.sign_in()
    page = await console.client.get(f"/admin/answers/{secret.id}")
    token = csrf_of(await page.text())
    refused = await console.client.post(f"/admin/answers/{secret.id}/reject",
                                        data={"csrf": token, "reason": " "})
    assert refused.status == 400 and "Say why the answer is rejected" in await refused.text()
    forget_sign_ins(console.db)
    console.client.session.cookie_jar.clear()
    await console.sign_in(VIEWER_PW)
    listing = await (await console.client.get("/admin/answers")).text()
    shown = await (await console.client.get(f"/admin/answers/{secret.id}")).text()
    assert "(restricted)" in listing and REPLY not in shown and "Ana: is it" not in shown
