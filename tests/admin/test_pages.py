"""Every console page over the seeded database: content, filters, escaping, sync now."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, insert, select

from rag.messages import NOT_INDEXED_YET
from rag.types import AnswerStatus
from storage.channel_policies import ChannelPolicyRepository
from storage.interactions import InteractionRepository
from storage.models import DocumentStats, Interaction, SyncRun
from storage.rollup import rebuild
from tests.admin.conftest import SCRIPT, SCRIPT_ID, Console, csrf_of
from tests.storage.builders import answer

ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture
async def admin(console: Console) -> Console:
    assert (await console.sign_in()).status == 303
    return console


async def _html(console: Console, path: str, status: int = 200) -> str:
    response = await console.client.get(path)
    assert response.status == status, path
    return await response.text()


@pytest.mark.parametrize("path", [
    "/admin/?window=90d", f"/admin/questions?q={SCRIPT[:7]}", f"/admin/questions/{SCRIPT_ID}",
    "/admin/gaps?window=90d", "/admin/documents?view=down", "/admin/documents?view=all",
    "/admin/evaluation", "/admin/sources", f"/admin/login?next=/admin/{SCRIPT}"])
async def test_markup_in_questions_and_titles_is_escaped(admin: Console, path: str) -> None:
    html = await _html(admin, path)
    assert SCRIPT not in html
    assert ESCAPED in html


async def test_a_javascript_link_never_becomes_a_link(admin: Console) -> None:
    for path in (f"/admin/questions/{SCRIPT_ID}", "/admin/documents?view=down"):
        assert 'href="javascript:' not in await _html(admin, path)


async def test_the_overview_shows_counts_and_charts(admin: Console) -> None:
    html = await _html(admin, "/admin/?window=90d")
    assert html.count("<svg") >= 4
    assert "Questions per day by outcome" in html and "<rect" in html
    assert re.search(r"<b>601</b><span>questions</span>", html)  # 600 seeded + the hostile one
    for stage in ("retrieve", "grade", "generate", "total"):
        assert f"<td>{stage}</td>" in html
    assert "A/B comparison" in html  # two modes in the window
    assert "#team-3" in html and "slack" in html
    assert re.search(r"\$\d+\.\d\d</b><span>estimated cost", html)


async def test_questions_filter_and_page(admin: Console) -> None:
    html = await _html(admin, "/admin/questions?status=no_answer&vote=down")
    ids = [int(i) for i in re.findall(r'<td><a href="/admin/questions/(\d+)">', html)]
    # Seeded: status no_answer when i % 6 == 3; a thumbs-down on i % 21 == 0 (every 3rd, 1 in 7)
    expected = sorted((i for i in range(1, 601) if i % 6 == 3 and i % 21 == 0), reverse=True)
    assert ids == [SCRIPT_ID, *expected]
    first = await _html(admin, "/admin/questions")
    older = re.search(r'rel="next" href="([^"]+)"', first)
    assert older is not None
    second = await _html(admin, older.group(1).replace("&amp;", "&"))
    page1 = re.findall(r'<td><a href="/admin/questions/(\d+)">', first)
    page2 = re.findall(r'<td><a href="/admin/questions/(\d+)">', second)
    assert len(page1) == 50 and len(page2) == 50 and not set(page1) & set(page2)
    assert int(page2[0]) < int(page1[-1])


async def test_questions_search_and_document_filter(admin: Console) -> None:
    html = await _html(admin, "/admin/questions?q=VPN+on+linux")
    questions = re.findall(r'class="q" href="[^"]+">([^<]+)<', html)
    assert questions and all("vpn on linux" in q for q in questions)
    by_doc = await _html(admin, "/admin/questions?doc=evil")
    assert re.findall(r'<td><a href="/admin/questions/(\d+)">', by_doc) == [str(SCRIPT_ID)]


async def test_a_bad_filter_value_marks_the_field(admin: Console) -> None:
    html = await _html(admin, "/admin/questions?since=yesterday", status=400)
    assert 'class="invalid"' in html and "Use a date such as 2026-11-24." in html


async def test_a_question_shows_candidates_grades_reasons_and_feedback(admin: Console) -> None:
    html = await _html(admin, "/admin/questions/21")
    rows = re.findall(r"<tr class=\"[^\"]*\"><td class=\"n\">(\d)</td>", html)
    assert rows == ["0", "1", "2", "3"]
    for rank in range(4):
        assert f"covers part {rank}" in html
    assert "0.90" in html and "<td>llm</td>" in html
    assert "👎 by U21 via button" in html and "<q>outdated</q>" in html
    assert "For laptop refresh, follow the handbook [1]." in html
    assert (await admin.client.get("/admin/questions/999999")).status == 404


async def test_content_gaps_group_similar_questions(admin: Console) -> None:
    html = await _html(admin, "/admin/gaps?window=90d")
    assert "still being indexed" not in html
    groups = re.findall(r'<span class="count">(\d+) question', html)
    sizes = [int(g) for g in groups]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 1
    assert "Closest documents" in html and "Handbook page" in html


async def test_documents_views(admin: Console) -> None:
    low = await _html(admin, "/admin/documents?view=low")
    assert "Handbook page 0<" in low and "Handbook page 1<" not in low  # every 4th is low
    # Graded low by the heuristic alone (fast mode): no model's verdict, so not listed.
    assert "Handbook page 2<" not in low and "Handbook page 6<" not in low
    assert "heuristic" in low  # the page says why those are left out
    never = await _html(admin, "/admin/documents?view=never")
    # The rows' own links, not the page's text: a random CSRF token can hold "d49" too.
    listed = set(re.findall(r'href="/admin/questions\?doc=([^"]+)"', never))
    assert {"d40", "d45"} <= listed and "d49" not in listed  # d49 failed to sync


def _row(html: str, doc_id: str) -> str:
    """The table row of one document (from its title cell to the end of the row)."""
    found = re.search(rf'<span class="hint">{re.escape(doc_id)}</span>.*?</tr>', html, re.S)
    assert found is not None, f"no row for {doc_id}"
    return found.group(0)


async def test_an_override_is_confirmed_and_shown_on_its_row(admin: Console) -> None:
    csrf = csrf_of(await _html(admin, "/admin/documents?view=all"))
    response = await admin.client.post("/admin/documents/override", data={
        "csrf": csrf, "doc_id": "d7", "kind": "boost", "back": "/admin/documents?view=all"})
    try:
        html = await response.text()
        assert response.status == 200 and "view=all" in str(response.url)
        assert 'role="status">d7: boosted.</p>' in html
        assert '<span class="badge">boost</span>' in _row(html, "d7")
        assert '<span class="badge">' not in _row(html, "d8")
        assert "not on main yet" not in html
    finally:
        reset = await admin.client.post("/admin/documents/override", data={
            "csrf": csrf, "doc_id": "d7", "kind": "reset", "back": "/admin/documents?view=all"})
    assert "d7: reset to what its history says." in await reset.text()
    assert '<span class="badge">' not in _row(await reset.text(), "d7")


async def test_a_document_deleted_at_its_source_is_marked(admin: Console) -> None:
    now = datetime.now(UTC)
    with admin.db.write() as session:
        session.execute(insert(DocumentStats), [{
            "doc_id": "gone-page", "title": "Old page", "url": "https://kb.example/gone",
            "retrieved": 5000, "graded": 0, "first_seen": now, "last_seen": now}])
    try:
        html = await _html(admin, "/admin/documents?view=all")
        assert "deleted at its source" in _row(html, "gone-page")
        assert "deleted at its source" not in _row(html, "d39")  # still synced
    finally:
        with admin.db.write() as session:
            session.execute(delete(DocumentStats).where(DocumentStats.doc_id == "gone-page"))


async def test_sources_show_runs_errors_and_next_run(admin: Console) -> None:
    html = await _html(admin, "/admin/sources")
    assert "d49: the page returned HTTP 500" in html and "partial" in html
    assert "Next run: 2" in html  # an actual time from the running scheduler
    assert "every 1440 min" in html


async def test_a_run_with_failures_is_not_shown_as_a_plain_ok(admin: Console) -> None:
    now = datetime.now(UTC)
    run = {"full": False, "status": "ok", "started_at": now, "finished_at": now,
           "added": 0, "updated": 0, "deleted": 0, "unchanged": 3, "chunks_written": 0}
    with admin.db.write() as session:
        session.execute(insert(SyncRun), [
            {**run, "source": "handbook", "failed": 5, "errors": ["broken.pdf: no EOF marker"]},
            {**run, "source": "wiki", "failed": 0, "errors": []}])
    try:
        html = await _html(admin, "/admin/sources")
        handbook, wiki = html.split('id="source-wiki"')
        newest = handbook.split("<tbody>")[1].split("</tr>")[0]
        assert '<span class="status warning">partial</span>' in newest  # not a green "ok"
        assert "The last run could not read 5" in handbook
        assert "No document indexed yet" in wiki and "Not synced yet" not in wiki
    finally:
        with admin.db.write() as session:
            session.execute(delete(SyncRun).where(SyncRun.started_at == now))


async def test_sync_now_runs_the_scheduler(admin: Console) -> None:
    html = await _html(admin, "/admin/sources")
    token = re.search(r'name="csrf" value="([^"]+)"', html)
    assert token is not None
    before = _runs(admin)
    response = await admin.client.post("/admin/sources/handbook/sync",
                                       data={"csrf": token.group(1)}, allow_redirects=False)
    assert response.status == 303 and response.headers["Location"].endswith("started=handbook")
    for _ in range(200):
        if len(_runs(admin)) > len(before) and _runs(admin)[0].status != "running":
            break
        await asyncio.sleep(0.1)
    newest = _runs(admin)[0]
    assert newest.id not in {r.id for r in before}
    assert newest.status == "ok" and newest.added == 1
    unknown = await admin.client.post("/admin/sources/nope/sync", data={"csrf": token.group(1)})
    assert unknown.status == 404
    assert "There is no source named &#39;nope&#39;" in await unknown.text()


def _runs(console: Console) -> list[SyncRun]:
    with console.db.read() as session:
        return list(session.scalars(select(SyncRun).order_by(SyncRun.id.desc())))


async def test_evaluation_reports_and_their_charts(admin: Console) -> None:
    html = await _html(admin, "/admin/evaluation")
    assert "recall@10" in html and "0.85" in html and "<svg" in html
    chart = await admin.client.get("/admin/evaluation/handbook/chart.png")
    assert chart.status == 200 and (await chart.read()).startswith(b"\x89PNG")
    for bad in ("nope", "..%2F..%2Fsift.db"):
        assert (await admin.client.get(f"/admin/evaluation/{bad}/chart.png")).status == 404


async def test_channels_lists_the_stored_policies(admin: Console) -> None:
    ChannelPolicyRepository(admin.db).put("slack", "C42", f"Support {SCRIPT}", {
        "sources": ["handbook"], "only_when_confident": False, "follow_ups": False,
        "escalate_to": ["U0SUPPORT"], "respond": "questions"})
    html = await _html(admin, "/admin/channels")
    assert "<td>C42</td>" in html and f"Support {ESCAPED}" in html and SCRIPT not in html
    assert ("<td>sources: handbook; answers every question; escalates to U0SUPPORT; "
            "thread replies are not follow-ups</td>") in html
    assert "False" not in html and "only_when_confident" not in html  # words, not raw values
    assert 'href="/admin/channels/edit?platform=slack&amp;channel=C42"' in html  # admins edit


async def test_by_channel_names_a_channel_by_its_policy_s_label(admin: Console) -> None:
    repository = ChannelPolicyRepository(admin.db)
    repository.put("slack", "#team-3", "Team three", {})
    try:
        html = await _html(admin, "/admin/?window=90d")
        by_channel = html.split("<h2>By channel</h2>")[1].split("</section>")[0]
        assert 'title="#team-3">Team three</a>' in by_channel
        assert 'title="#team-4">#team-4</a>' in by_channel  # no policy: its id as it is
    finally:
        repository.remove("slack", "#team-3")


async def test_questions_asked_during_a_first_sync_get_a_tile_of_their_own(
        admin: Console) -> None:
    tile = re.compile(r"<b>(\d+)</b><span>asked while a first sync ran</span>")
    assert not tile.search(await _html(admin, "/admin/?window=90d"))  # none: no tile
    recorded = InteractionRepository(admin.db).record(
        answer("Where do I park?", status=AnswerStatus.NOT_INDEXED, text=NOT_INDEXED_YET))
    try:
        html = await _html(admin, "/admin/?window=90d")
        assert [int(n) for n in tile.findall(html)] == [1]
        assert re.search(r"<b>602</b><span>questions</span>", html)
    finally:  # the module's other tests count the seeded questions
        with admin.db.write() as session:
            session.execute(delete(Interaction).where(Interaction.id == recorded))
            rebuild(session.connection())
