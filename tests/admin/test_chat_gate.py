"""The web chat beyond loopback: only people signed in to the console get the page or an answer."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.admin.routes import chat_gate, mount
from bot.chat.access import PUBLIC, Asker, Audience
from bot.chat.service import ChatLimits, ChatService
from bot.settings import Settings
from bot.web import build_web_app
from bot.webchat.app import SIGN_IN_FIRST, WebChat
from rag.embed import LocalEmbedder
from storage.db import Database
from tests.admin.conftest import ADMIN_PW, VIEWER_PW, csrf_of
from tests.fakes.chat import make_flow
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import make_pipeline
from tests.rag.corpus import CHUNKS

QUESTION = "How do I rotate the staging database credentials?"


class RecordingAccess:
    """Public answers for everyone; remembers who asked (the resolver's input)."""

    def __init__(self) -> None:
        self.askers: list[Asker] = []

    async def groups_for(self, asker: Asker, audience: Audience) -> tuple[str, ...]:
        self.askers.append(asker)
        return (PUBLIC,)


@dataclass
class Site:
    client: TestClient
    access: RecordingAccess
    sub: web.Application

    async def chat_token(self) -> str:
        page = await self.client.get("/")
        assert page.status == 200
        found = re.search(r'name="sift-csrf" content="([0-9a-f]+)"', await page.text())
        assert found
        return found.group(1)

    async def ask(self, csrf: str) -> tuple[int, str]:
        response = await self.client.post("/chat/ask", json={"question": QUESTION,
                                                              "csrf": csrf})
        return response.status, await response.text()


async def sign_in(client: TestClient, password: str) -> None:
    page = await client.get("/admin/login?next=%2F")
    response = await client.post("/admin/login", allow_redirects=False, data={
        "csrf": csrf_of(await page.text()), "password": password, "next": "/"})
    assert response.status == 303 and response.headers["Location"] == "/"


@pytest.fixture
async def site(embedder: LocalEmbedder, tmp_path: Path) -> AsyncIterator[Site]:
    db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    db.upgrade()
    index = MemoryIndex()
    await index.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    stores = MemoryChatStores()
    service = ChatService(make_pipeline(index, embedder, None, recorder=stores.interactions),
                          stores.chat_stores(), ChatLimits())
    access = RecordingAccess()
    root = build_web_app({})
    settings = Settings(admin={"password": ADMIN_PW, "viewer_password": VIEWER_PW})
    sub = mount(root, db, settings, embedder, None)
    assert sub is not None
    WebChat(make_flow(service, access=access), gate=chat_gate(sub)).mount(root)
    async with TestClient(TestServer(root)) as client:
        yield Site(client, access, sub)
    db.dispose()


async def test_without_a_session_the_page_sends_to_sign_in(site: Site) -> None:
    response = await site.client.get("/", allow_redirects=False)
    assert response.status == 303
    assert response.headers["Location"] == "/admin/login?next=/"
    assert "sift_chat" not in response.headers.get("Set-Cookie", "")


async def test_an_attacker_without_a_session_gets_no_answer(site: Site) -> None:
    # A token the page once gave a signed-in visitor does not stand in for a session.
    await sign_in(site.client, VIEWER_PW)
    token = await site.chat_token()
    site.client.session.cookie_jar.clear(lambda c: c.key == "sift_admin")
    status, text = await site.ask(token)
    assert (status, text) == (401, SIGN_IN_FIRST)
    site.client.session.cookie_jar.update_cookies({"sift_admin": "forged-token"})
    status, text = await site.ask(token)
    assert status == 401
    vote = await site.client.post("/chat/vote", json={"ref": "x", "vote": 1, "csrf": token})
    assert vote.status == 401
    assert site.access.askers == []  # nothing reached the flow


async def test_a_signed_out_session_no_longer_opens_the_chat(site: Site) -> None:
    await sign_in(site.client, ADMIN_PW)
    token = await site.chat_token()
    console_page = await site.client.get("/admin/sources")
    await site.client.post("/admin/logout", data={"csrf": csrf_of(await console_page.text())})
    assert (await site.ask(token))[0] == 401
    assert (await site.client.get("/", allow_redirects=False)).status == 303


async def test_a_signed_in_viewer_asks_as_the_public(site: Site) -> None:
    await sign_in(site.client, VIEWER_PW)
    status, text = await site.ask(await site.chat_token())
    assert status == 200 and "event: answer" in text
    (asker,) = site.access.askers
    assert asker.email == ""  # a shared password names nobody: public documents only
