"""The canary suite for the web chat behind single sign-on, through `sift serve`: an answer
reaches only the person whose sign-in asked it, and never the next person on the same
browser (nor the same person after signing out), in the page or in the model's prompt."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest

from bot.app import App
from bot.settings import GroupSettings
from rag.embed import LocalEmbedder
from storage.models import ConversationTurn, Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.oidc_server import FakeOidc
from tests.permissions.canary import HR, HR_EMAIL, PUB, QUESTION, STRANGER, markers_in, visible
from tests.scenarios.stack import ServedSift, settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

CLIENT_ID, SECRET = "sift-chat", "client-secret-9c2e4f1a"
FOLLOW_UP = "and what was the code again?"


@dataclass
class Site:
    sift: ServedSift
    oidc: FakeOidc
    browser: aiohttp.ClientSession  # one browser, whoever sits at it

    async def sign_in(self, email: str) -> None:
        self.oidc.account.email, self.oidc.account.sub = email, f"sub-{email}"
        start = await self.browser.get(f"/admin/oidc/start?next={quote('/', safe='')}",
                                       allow_redirects=False)
        assert start.status == 303, await start.text()
        async with aiohttp.ClientSession() as provider, provider.get(
                start.headers["Location"], allow_redirects=False) as consent:
            assert consent.status == 302
            back = consent.headers["Location"]
        done = await self.browser.get(back, allow_redirects=False)
        assert done.status == 200, await done.text()

    async def sign_out(self) -> None:
        page = await (await self.browser.get("/admin/sources")).text()
        found = re.search(r'name="csrf" value="([^"]+)"', page)
        assert found is not None
        out = await self.browser.post("/admin/logout", data={"csrf": found.group(1)},
                                      allow_redirects=False)
        assert out.status == 303

    async def ask(self, question: str) -> str:
        page = await (await self.browser.get("/")).text()
        token = re.search(r'name="sift-csrf" content="([0-9a-f]+)"', page)
        assert token is not None, page[:300]
        async with self.browser.post("/chat/ask", json={"question": question,
                                                        "csrf": token.group(1)}) as response:
            assert response.status == 200
            return await response.text()


@pytest.fixture
async def site(tmp_path: Path, weaviate_server: ManagedWeaviate, canary_collection: str,
               embedder: LocalEmbedder, echoing_claude: FakeAnthropic) -> AsyncIterator[Site]:
    async with FakeOidc(CLIENT_ID, SECRET) as oidc:
        assert isinstance(oidc, FakeOidc)
        settings = settings_for(
            tmp_path, weaviate_server, canary_collection, echoing_claude, sources=[],
            host="0.0.0.0",  # beyond loopback: the chat is behind the console's sign-in
            groups=[GroupSettings(name="hr", emails=[HR_EMAIL])],
            admin={"oidc": {"issuer": oidc.url, "client_id": CLIENT_ID,
                            "client_secret": SECRET,
                            "viewer_domains": ["acme.example", "x.example"]}})
        app = App(settings)
        app.__dict__["embedder"] = embedder
        sift = ServedSift(app)
        await sift.start()
        browser = aiohttp.ClientSession(sift.base_url, cookie_jar=aiohttp.CookieJar(unsafe=True))
        try:
            yield Site(sift, oidc, browser)
        finally:
            await browser.close()
            await sift.stop()


async def test_the_next_person_on_the_browser_inherits_no_conversation(
        site: Site, echoing_claude: FakeAnthropic) -> None:
    await site.sign_in(HR_EMAIL)
    first = await site.ask(QUESTION)
    assert markers_in(first) == visible("hr")  # hr's member reads hr's answer
    await site.sign_out()
    echoing_claude.requests.clear()
    await site.sign_in(STRANGER)
    second = await site.ask(FOLLOW_UP)
    assert HR not in second and markers_in(second) <= {PUB}
    prompts = json.dumps([r.body for r in echoing_claude.requests])
    assert echoing_claude.requests and HR not in prompts  # nor did the model read hr's answer
    rows = site.sift.rows(Interaction)
    assert len(rows) == 2


async def test_signing_out_ends_the_conversation(site: Site,
                                                 echoing_claude: FakeAnthropic) -> None:
    await site.sign_in(HR_EMAIL)
    await site.ask(QUESTION)
    assert any(HR in t.text for t in site.sift.rows(ConversationTurn))
    await site.sign_out()
    assert site.sift.rows(ConversationTurn) == []  # what it held is deleted, not only hidden
    await site.sign_in(HR_EMAIL)  # the same person again: a new conversation
    echoing_claude.requests.clear()
    await site.ask(FOLLOW_UP)
    history = [r.body for r in echoing_claude.requests if "Earlier in this conversation"
               in json.dumps(r.body)]
    assert history == []
