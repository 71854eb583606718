"""Behind a reverse proxy: X-Forwarded-* believed from SIFT_TRUSTED_PROXIES only, and the
attacker's forged headers from anywhere else changing nothing (limits, logs, cookies, OIDC).

Every request travels over real TCP from a chosen loopback address (127.0.0.0/8 is all this
machine): the proxy connects from PROXY, people and attackers from other addresses."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from yarl import URL

from bot.admin.routes import mount
from bot.chat.service import ChatLimits, ChatService
from bot.proxy import TrustedProxies, client_of
from bot.settings import Settings
from bot.settings_check import parse_networks
from bot.web import build_web_app
from bot.webchat.app import CSRF_COOKIE, USER_COOKIE, WebChat
from rag.embed import LocalEmbedder
from storage.db import Database
from tests.admin.conftest import csrf_of, forget_sign_ins
from tests.admin.test_oidc import CLIENT_ID, SECRET, oidc_settings
from tests.fakes.chat import make_flow
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.oidc_server import FakeOidc
from tests.rag.builders import make_pipeline

PROXY, PERSON, ATTACKER = "127.0.0.5", "127.0.0.9", "127.0.0.13"
PASSWORD = "proxy test password 51"


@dataclass
class Site:
    server: TestServer

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.port}{path}"

    async def send(self, method: str, path: str, *, source: str,
                   headers: Mapping[str, str] | None = None, **kwargs: Any) -> Reply:
        """One request over a connection whose far end is `source`."""
        connector = aiohttp.TCPConnector(local_addr=(source, 0), force_close=True)
        async with aiohttp.ClientSession(connector=connector) as session, session.request(
                method, self.url(path), headers=dict(headers or {}), allow_redirects=False,
                **kwargs) as response:
            return Reply(response.status, await response.text(),
                         response.headers.getall("Set-Cookie", []),
                         response.headers.get("Location", ""))


@dataclass
class Reply:
    status: int
    text: str
    set_cookies: list[str] = field(default_factory=list)
    location: str = ""

    def cookie(self, name: str) -> str:
        for line in self.set_cookies:
            if line.startswith(f"{name}="):
                return line
        raise AssertionError(f"no {name} cookie in {self.set_cookies}")


async def whoami(request: web.Request) -> web.Response:
    client = client_of(request)
    return web.json_response({"address": client.address, "scheme": client.scheme,
                              "host": client.host, "secure": client.secure})


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    database.upgrade()
    return database


SiteFactory = Callable[..., Any]


@pytest.fixture
async def site(db: Database, embedder: LocalEmbedder) -> AsyncIterator[SiteFactory]:
    """`await site(trusted=[...], **settings)`: the console and /whoami behind `trusted`."""
    servers: list[TestServer] = []

    async def make(trusted: list[str], **values: Any) -> Site:
        settings = Settings(trusted_proxies=trusted, **values)
        root = build_web_app({}, proxies=TrustedProxies(parse_networks(settings.trusted_proxies)))
        root.router.add_get("/whoami", whoami)
        mount(root, db, settings, embedder, None)
        stores = MemoryChatStores()
        service = ChatService(make_pipeline(MemoryIndex(), embedder, None,
                                            recorder=stores.interactions),
                              stores.chat_stores(), ChatLimits())
        WebChat(make_flow(service)).mount(root)
        server = TestServer(root, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        forget_sign_ins(db)
        return Site(server)

    yield make
    for server in servers:
        await server.close()
    db.dispose()


FORGED = {"X-Forwarded-For": "198.51.100.66", "X-Forwarded-Proto": "https",
          "X-Forwarded-Host": "evil.example"}


@pytest.mark.parametrize(("trusted", "source", "headers", "expected"), [
    # No proxy is trusted: the headers are ignored, whoever sends them.
    ([], PROXY, FORGED, (PROXY, "http", "127.0.0.1")),
    # The attacker is not a trusted proxy: forged headers change nothing.
    ([PROXY], ATTACKER, FORGED, (ATTACKER, "http", "127.0.0.1")),
    (["127.0.0.4/31"], ATTACKER, FORGED, (ATTACKER, "http", "127.0.0.1")),
    # The trusted proxy says who it forwards, and how they came.
    ([PROXY], PROXY, {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https",
                      "X-Forwarded-Host": "sift.example.com"},
     ("203.0.113.7", "https", "sift.example.com")),
    # A CIDR range of proxies.
    (["127.0.0.0/29"], PROXY, {"X-Forwarded-For": "203.0.113.7"},
     ("203.0.113.7", "http", "127.0.0.1")),
    # The client prepended its own forgery: the proxy appended the address it saw, and the
    # right-most address that is no trusted proxy is the client.
    ([PROXY], PROXY, {"X-Forwarded-For": "198.51.100.66, 203.0.113.7"},
     ("203.0.113.7", "http", "127.0.0.1")),
    # Two proxies in a row (an ingress behind a load balancer), both trusted.
    ([PROXY, "10.0.0.0/8"], PROXY, {"X-Forwarded-For": "203.0.113.7, 10.1.2.3"},
     ("203.0.113.7", "http", "127.0.0.1")),
    # The proxy's own request (a health check) names nobody: the proxy is the client.
    ([PROXY], PROXY, {}, (PROXY, "http", "127.0.0.1")),
])
async def test_forwarded_headers_count_only_from_trusted_proxies(
        site: SiteFactory, trusted: list[str], source: str, headers: dict[str, str],
        expected: tuple[str, str, str]) -> None:
    web_site = await site(trusted)
    reply = await web_site.send("GET", "/whoami", source=source, headers=headers)
    assert reply.status == 200
    body = json.loads(reply.text)
    host = expected[2] if expected[2] != "127.0.0.1" else f"127.0.0.1:{web_site.server.port}"
    assert (body["address"], body["scheme"], body["host"]) == (expected[0], expected[1], host)


async def test_a_malformed_chain_from_a_trusted_proxy_is_refused(site: SiteFactory) -> None:
    web_site = await site([PROXY])
    reply = await web_site.send("GET", "/whoami", source=PROXY,
                                headers={"X-Forwarded-For": "not-an-address"})
    assert reply.status == 400
    # From anyone else the same header is not read at all.
    reply = await web_site.send("GET", "/whoami", source=ATTACKER,
                                headers={"X-Forwarded-For": "not-an-address"})
    assert reply.status == 200 and ATTACKER in reply.text


async def sign_in(web_site: Site, password: str, *, source: str,
                  headers: Mapping[str, str] | None = None) -> Reply:
    page = await web_site.send("GET", "/admin/login", source=source, headers=headers)
    token = page.cookie("sift_admin_login").split(";")[0].split("=", 1)[1]
    cookie = {"Cookie": f"sift_admin_login={token}"}
    return await web_site.send("POST", "/admin/login", source=source,
                               headers={**(headers or {}), **cookie},
                               data={"csrf": csrf_of(page.text), "password": password})


def via_proxy(client: str) -> dict[str, str]:
    return {"X-Forwarded-For": client, "X-Forwarded-Proto": "https"}


async def test_the_sign_in_limit_counts_each_person_behind_the_proxy(
        site: SiteFactory) -> None:
    web_site = await site([PROXY], admin={"password": PASSWORD, "login_attempts": 3})
    guesser, colleague = via_proxy("203.0.113.7"), via_proxy("203.0.113.8")
    for _ in range(3):
        assert (await sign_in(web_site, "guess", source=PROXY, headers=guesser)).status == 401
    assert (await sign_in(web_site, PASSWORD, source=PROXY, headers=guesser)).status == 429
    # Everyone else comes through the same proxy, and is not locked out by the guesser.
    signed_in = await sign_in(web_site, PASSWORD, source=PROXY, headers=colleague)
    assert signed_in.status == 303, signed_in.text


async def test_a_forged_forwarded_for_does_not_escape_the_sign_in_limit(
        site: SiteFactory) -> None:
    web_site = await site([PROXY], admin={"password": PASSWORD, "login_attempts": 3})
    for n in range(3):  # a fresh forged address on every try, straight to Sift
        forged = {"X-Forwarded-For": f"198.51.100.{n + 1}"}
        assert (await sign_in(web_site, "guess", source=ATTACKER,
                              headers=forged)).status == 401
    forged = {"X-Forwarded-For": "198.51.100.99"}
    assert (await sign_in(web_site, PASSWORD, source=ATTACKER, headers=forged)).status == 429
    # And its failures were counted against the attacker, not against the forged addresses.
    assert (await sign_in(web_site, PASSWORD, source=PROXY,
                          headers=via_proxy("198.51.100.1"))).status == 303


async def test_the_log_names_the_real_client(site: SiteFactory,
                                             caplog: pytest.LogCaptureFixture) -> None:
    web_site = await site([PROXY], admin={"password": PASSWORD})
    with caplog.at_level(logging.INFO, logger="bot.admin.console"):
        await sign_in(web_site, "guess", source=PROXY, headers=via_proxy("203.0.113.7"))
        await sign_in(web_site, "guess", source=ATTACKER,
                      headers={"X-Forwarded-For": "198.51.100.66"})
    failures = [r.getMessage() for r in caplog.records if "failed sign-in" in r.getMessage()]
    assert [f.split(" (")[0] for f in failures] == [
        "console: failed sign-in from 203.0.113.7", f"console: failed sign-in from {ATTACKER}"]


@pytest.mark.parametrize(("source", "headers", "secure"), [
    (PROXY, {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"}, True),
    (PROXY, {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "http"}, False),
    (ATTACKER, {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"}, False),
])
async def test_cookies_are_secure_whenever_the_request_came_over_https(
        site: SiteFactory, source: str, headers: dict[str, str], secure: bool) -> None:
    web_site = await site([PROXY], admin={"password": PASSWORD})
    page = await web_site.send("GET", "/admin/login", source=source, headers=headers)
    assert ("; Secure" in page.cookie("sift_admin_login")) is secure
    done = await sign_in(web_site, PASSWORD, source=source, headers=headers)
    assert done.status == 303
    assert ("; Secure" in done.cookie("sift_admin")) is secure
    chat = await web_site.send("GET", "/", source=source, headers=headers)
    assert chat.status == 200
    for name in (USER_COOKIE, CSRF_COOKIE):
        assert ("; Secure" in chat.cookie(name)) is secure


async def redirect_uri(web_site: Site, source: str, headers: Mapping[str, str]) -> str:
    start = await web_site.send("GET", "/admin/oidc/start", source=source, headers=headers)
    assert start.status == 303, start.text
    return URL(start.location).query["redirect_uri"]


async def test_the_sign_on_redirect_follows_the_public_url_or_the_trusted_proxy(
        site: SiteFactory) -> None:
    async with FakeOidc(CLIENT_ID, SECRET) as fake:
        behind = await site([PROXY], admin={"oidc": oidc_settings(fake.url)})
        told = {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https",
                "X-Forwarded-Host": "sift.example.com"}
        assert await redirect_uri(behind, PROXY, told) == \
            "https://sift.example.com/admin/oidc/callback"
        # The attacker's forged host does not become the provider's redirect target.
        forged = await redirect_uri(behind, ATTACKER, FORGED)
        assert forged == f"http://127.0.0.1:{behind.server.port}/admin/oidc/callback"
        public = await site([PROXY], public_url="https://sift.corp.example/",
                            admin={"oidc": oidc_settings(fake.url)})
        assert await redirect_uri(public, ATTACKER, FORGED) == \
            "https://sift.corp.example/admin/oidc/callback"


@pytest.mark.parametrize(("value", "sentence"), [
    ("10.0.0.0/8,bogus", "'bogus' is not an IP address or a CIDR range"),
    ("10.0.0.0/33", "'10.0.0.0/33' is not an IP address or a CIDR range"),
])
def test_a_bad_proxy_entry_is_one_sentence_naming_the_setting(
        monkeypatch: pytest.MonkeyPatch, value: str, sentence: str) -> None:
    from bot.settings import build_settings
    from rag.errors import ConfigError

    monkeypatch.setenv("SIFT_TRUSTED_PROXIES", value)
    with pytest.raises(ConfigError) as caught:
        build_settings()
    assert "SIFT_TRUSTED_PROXIES" in str(caught.value) and sentence in str(caught.value)


def test_the_environment_lists_proxies_separated_by_commas(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.settings import build_settings

    monkeypatch.setenv("SIFT_TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.5 ,fd00::/8")
    assert build_settings().trusted_proxies == ["10.0.0.0/8", "192.168.1.5", "fd00::/8"]
