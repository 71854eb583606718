"""The console behind a load balancer: two replicas over one database, one browser, any order."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from sqlalchemy import select
from yarl import URL

from bot.admin.console import WRONG_PASSWORD
from bot.admin.oidc import NOT_STARTED
from bot.admin.routes import mount
from bot.settings import Settings
from bot.web import build_web_app
from rag.embed import LocalEmbedder
from storage.db import Database
from storage.models import EventKey
from tests.admin.conftest import ADMIN_PW, csrf_of
from tests.admin.test_oidc import CLIENT_ID, SECRET, oidc_settings
from tests.fakes.oidc_server import FakeOidc


@dataclass
class Browser:
    """One person's browser (one cookie jar) and the replicas a load balancer could pick."""

    http: aiohttp.ClientSession
    replicas: list[str]
    db: Database

    async def get(self, replica: int, path: str) -> aiohttp.ClientResponse:
        response = await self.http.get(self.replicas[replica] + path, allow_redirects=False)
        await response.read()
        return response

    async def post(self, replica: int, path: str, data: dict[str, str]) -> aiohttp.ClientResponse:
        response = await self.http.post(self.replicas[replica] + path, data=data,
                                        allow_redirects=False)
        await response.read()
        return response

    async def sign_in(self, replica: int, password: str = ADMIN_PW) -> aiohttp.ClientResponse:
        token = csrf_of(await (await self.get(replica, "/admin/login")).text())
        return await self.post(replica, "/admin/login", {"csrf": token, "password": password})

    async def signed_in(self, replica: int) -> bool:
        return (await self.get(replica, "/admin/")).status == 200


async def _replicas(db: Database, settings: dict[str, object], embedder: LocalEmbedder,
                    count: int = 2) -> AsyncIterator[list[str]]:
    servers = []
    for _ in range(count):  # each replica reads its own copy of the settings, as a process does
        root = build_web_app({})
        assert mount(root, db, Settings(admin=settings), embedder, None) is not None
        server = TestServer(root)
        await server.start_server()
        servers.append(server)
    try:
        yield [str(server.make_url("")).rstrip("/") for server in servers]
    finally:
        for server in servers:
            await server.close()


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    database.upgrade()
    return database


async def _browser(db: Database, replicas: list[str]) -> AsyncIterator[Browser]:
    # unsafe=True: keep cookies for 127.0.0.1; cookies ignore the port, as for one host name.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        yield Browser(http, replicas, db)


@pytest.fixture
async def browser(db: Database, embedder: LocalEmbedder) -> AsyncIterator[Browser]:
    async for replicas in _replicas(db, {"password": ADMIN_PW}, embedder):
        async for found in _browser(db, replicas):
            yield found


async def test_a_sign_in_on_one_replica_holds_on_the_other(browser: Browser) -> None:
    assert not await browser.signed_in(1)
    assert (await browser.sign_in(0)).status == 303
    assert await browser.signed_in(1)
    # A form rendered by one replica posts to the other: its CSRF token is accepted there.
    token = csrf_of(await (await browser.get(0, "/admin/sources")).text())
    out = await browser.post(1, "/admin/logout", {"csrf": token})
    assert out.status == 303 and out.headers["Location"] == "/admin/login"
    # Signed out on one replica is signed out on every replica, even with the old cookie.
    assert not await browser.signed_in(0)


async def test_a_csrf_token_is_bound_to_its_own_session(browser: Browser,
                                                        db: Database,
                                                        embedder: LocalEmbedder) -> None:
    await browser.sign_in(0)
    async for replicas in _replicas(db, {"password": ADMIN_PW}, embedder, count=1):
        async for other in _browser(db, replicas):
            await other.sign_in(0)
            theirs = csrf_of(await (await other.get(0, "/admin/sources")).text())
    refused = await browser.post(1, "/admin/logout", {"csrf": theirs})
    assert refused.status == 403
    assert await browser.signed_in(0)


async def test_failed_sign_ins_count_on_every_replica(browser: Browser) -> None:
    """Five tries per address per window: a guesser does not get five per replica."""
    for replica in (0, 1, 0, 1, 0):
        failed = await browser.sign_in(replica, "wrong")
        assert failed.status == 401 and WRONG_PASSWORD in await failed.text()
    assert (await browser.sign_in(1)).status == 429
    assert not await browser.signed_in(1)


async def test_the_database_holds_no_session_token(browser: Browser) -> None:
    await browser.sign_in(0)
    cookie = {c.key: c.value for c in browser.http.cookie_jar}["sift_admin"]
    with browser.db.read() as session:
        rows = session.execute(select(EventKey.key, EventKey.value)).all()
    stored = [row.key for row in rows if row.key.startswith("session:")]
    assert len(stored) == 1
    assert all(cookie not in f"{row.key} {row.value}" for row in rows)
    # Someone who read the database presents what it holds as the cookie: no session.
    async for thief in _browser(browser.db, browser.replicas):
        thief.http.cookie_jar.update_cookies(
            {"sift_admin": stored[0].removeprefix("session:")}, URL(browser.replicas[1]))
        assert not await thief.signed_in(1)


async def test_single_sign_on_may_come_back_to_another_replica(
        db: Database, embedder: LocalEmbedder) -> None:
    async with FakeOidc(CLIENT_ID, SECRET) as fake:
        assert isinstance(fake, FakeOidc)
        async for replicas in _replicas(db, {"oidc": oidc_settings(fake.url)}, embedder):
            async for browser in _browser(db, replicas):
                start = await browser.get(0, "/admin/oidc/start")
                assert start.status == 303
                async with browser.http.get(start.headers["Location"],
                                            allow_redirects=False) as consent:
                    back = URL(consent.headers["Location"]).path_qs
                assert (await browser.get(1, back)).status == 200  # the other replica
                assert await browser.signed_in(0) and await browser.signed_in(1)
                # Replayed at the replica that started it: the state was used up.
                replay = await browser.get(0, back)
                assert replay.status == 403 and NOT_STARTED in unescape(await replay.text())

