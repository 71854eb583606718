"""Editing channel policies in the console: admins only, CSRF-checked, each field checked."""

from __future__ import annotations

import asyncio

from storage.channel_policies import ChannelPolicyRepository
from tests.admin.conftest import VIEWER_PW, Console


def form(csrf: str, **values: str) -> dict[str, str]:
    base = {"csrf": csrf, "platform": "slack", "channel": "C0HELP001", "label": "#help",
            "sources": "handbook", "respond": "questions", "escalate_to": "", "audience": "",
            "follow_ups": "on", "enabled": "on"}
    return {**base, **values}


async def stored(console: Console, channel: str = "C0HELP001") -> dict[str, object] | None:
    found = await asyncio.to_thread(ChannelPolicyRepository(console.db).get, "slack", channel)
    return None if found is None else dict(found.settings)


async def test_an_admin_creates_edits_and_removes_a_policy(console: Console) -> None:
    await console.sign_in()
    csrf = await console.csrf("/admin/channels/edit")
    saved = await console.client.post("/admin/channels", data=form(csrf),
                                      allow_redirects=False)
    assert saved.status == 303
    assert await stored(console) == {
        "sources": ["handbook"], "escalate_to": [], "audience": [], "respond": "questions",
        "only_when_confident": False, "private_answers": False, "follow_ups": True,
        "enabled": True}
    page = await (await console.client.get(
        "/admin/channels/edit?platform=slack&channel=C0HELP001")).text()
    assert 'value="handbook"' in page and 'value="#help"' in page
    await console.client.post("/admin/channels", data=form(csrf, only_when_confident="on"))
    assert (await stored(console) or {})["only_when_confident"] is True
    await console.client.post("/admin/channels/remove", data={
        "csrf": csrf, "platform": "slack", "channel": "C0HELP001"})
    assert await stored(console) is None


async def test_a_refused_field_comes_back_marked(console: Console) -> None:
    await console.sign_in()
    csrf = await console.csrf("/admin/channels/edit")
    response = await console.client.post("/admin/channels",
                                         data=form(csrf, sources="handbook,intranet"))
    page = await response.text()
    assert response.status == 400
    assert 'id="error-sources"' in page and "Unknown source &#39;intranet&#39;" in page
    assert 'value="handbook,intranet"' in page  # what was typed stays in the form
    bad_id = await console.client.post("/admin/channels", data=form(csrf, channel="general"))
    assert 'id="error-channel"' in await bad_id.text()
    assert await stored(console) is None and await stored(console, "general") is None


async def test_a_viewer_cannot_edit(console: Console) -> None:
    await console.sign_in(VIEWER_PW)
    assert (await console.client.get("/admin/channels/edit")).status == 403
    csrf = await console.csrf("/admin/channels")
    response = await console.client.post("/admin/channels", data=form(csrf))
    assert response.status == 403 and await stored(console) is None


async def test_a_forged_form_is_refused(console: Console) -> None:
    await console.sign_in()
    response = await console.client.post("/admin/channels", data=form("forged"))
    assert response.status == 403 and await stored(console) is None


async def test_a_hostile_label_is_escaped(console: Console) -> None:
    await console.sign_in()
    csrf = await console.csrf("/admin/channels/edit")
    await console.client.post("/admin/channels", data=form(csrf, label="<script>x()</script>"))
    page = await (await console.client.get("/admin/channels")).text()
    assert "<script>x()" not in page and "&lt;script&gt;x()" in page


async def test_an_admin_steers_a_document_and_a_viewer_cannot(console: Console) -> None:
    from storage.overrides import OverrideRepository

    repository = OverrideRepository(console.db)
    await console.sign_in()
    page = await (await console.client.get("/admin/documents?view=all")).text()
    assert 'value="hide"' in page and 'action="/admin/documents/override"' in page
    csrf = await console.csrf("/admin/documents?view=all")
    response = await console.client.post("/admin/documents/override", allow_redirects=False,
                                         data={"csrf": csrf, "doc_id": "doc-3", "kind": "hide",
                                               "back": "/admin/documents?view=all"})
    assert response.status == 303 and response.headers["Location"].startswith(
        "/admin/documents")
    assert (await asyncio.to_thread(repository.for_documents, ["doc-3"]))["doc-3"].kind == "hide"
    await console.client.post("/admin/documents/override", data={
        "csrf": csrf, "doc_id": "doc-3", "kind": "reset"})
    assert await asyncio.to_thread(repository.for_documents, ["doc-3"]) == {}
    bad = await console.client.post("/admin/documents/override", data={
        "csrf": csrf, "doc_id": "doc-3", "kind": "delete"})
    assert bad.status == 400
    forged = await console.client.post("/admin/documents/override", data={
        "csrf": "forged", "doc_id": "doc-3", "kind": "hide"})
    assert forged.status == 403
    await console.client.post("/admin/logout", data={"csrf": csrf})
    await console.sign_in(VIEWER_PW)
    viewer_csrf = await console.csrf("/admin/documents?view=all")
    denied = await console.client.post("/admin/documents/override", data={
        "csrf": viewer_csrf, "doc_id": "doc-3", "kind": "hide"})
    assert denied.status == 403
    assert await asyncio.to_thread(repository.for_documents, ["doc-3"]) == {}
