"""Single sign-on against a fake OpenID Connect provider, and the attacker's callbacks."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from selenium.webdriver.remote.webdriver import WebDriver
from yarl import URL

from bot.admin.oidc import NOT_STARTED, PROVIDER_SAID_NO, UNVERIFIED, check
from bot.admin.routes import chat_gate, mount
from bot.chat.service import ChatLimits, ChatService
from bot.settings import OidcSettings, Settings
from bot.web import build_web_app
from bot.webchat.app import WebChat
from rag.embed import LocalEmbedder
from rag.errors import ConfigError
from storage.db import Database
from tests.admin.conftest import csrf_of
from tests.admin.test_chat_gate import QUESTION, RecordingAccess
from tests.browser import open_page, run, shot, wait_for
from tests.fakes.chat import make_flow
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.oidc_server import Account, FakeOidc, new_key
from tests.rag.builders import make_pipeline

CLIENT_ID, SECRET = "sift-console", "client-secret-4b1d9e0c7a"
NOT_ALLOWED = "The account mallory@evil.example is not allowed to use this console"


def oidc_settings(issuer: str, secret: str = SECRET) -> dict[str, Any]:
    return {"issuer": issuer, "client_id": CLIENT_ID, "client_secret": secret,
            "admin_emails": ["ada@example.com"], "admin_groups": ["sift-admins"],
            "viewer_domains": ["example.com"]}


@dataclass
class Sso:
    client: TestClient
    fake: FakeOidc
    access: RecordingAccess

    async def consent(self, next_: str = "/admin/") -> str:
        """Start at the console, consent at the provider: the callback path it sends back."""
        start = await self.client.get(f"/admin/oidc/start?next={quote(next_, safe='')}",
                                      allow_redirects=False)
        assert start.status == 303, await start.text()
        async with aiohttp.ClientSession() as browser, browser.get(
                start.headers["Location"], allow_redirects=False) as consent:
            assert consent.status == 302
            return URL(consent.headers["Location"]).path_qs

    async def callback(self, path_qs: str) -> aiohttp.ClientResponse:
        return await self.client.get(path_qs, allow_redirects=False)

    async def signed_in(self) -> bool:
        response = await self.client.get("/admin/", allow_redirects=False)
        return response.status == 200

    async def sign_out(self) -> None:
        page = await (await self.client.get("/admin/sources")).text()
        await self.client.post("/admin/logout", data={"csrf": csrf_of(page)})


@asynccontextmanager
async def console_with_sso(embedder: LocalEmbedder, tmp_path: Path,
                           secret: str = SECRET) -> AsyncIterator[Sso]:
    db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    db.upgrade()
    index = MemoryIndex()
    stores = MemoryChatStores()
    service = ChatService(make_pipeline(index, embedder, None, recorder=stores.interactions),
                          stores.chat_stores(), ChatLimits())
    access = RecordingAccess()
    async with FakeOidc(CLIENT_ID, secret) as fake:
        assert isinstance(fake, FakeOidc)
        root = build_web_app({})
        sub = mount(root, db, Settings(admin={"oidc": oidc_settings(fake.url, secret)}),
                    embedder, None)
        assert sub is not None  # OIDC alone turns the console on
        WebChat(make_flow(service, access=access), gate=chat_gate(sub)).mount(root)
        async with TestClient(TestServer(root)) as client:
            yield Sso(client, fake, access)
    db.dispose()


@pytest.fixture
async def sso(embedder: LocalEmbedder, tmp_path: Path) -> AsyncIterator[Sso]:
    async with console_with_sso(embedder, tmp_path) as site:
        yield site


async def test_sign_in_through_the_provider(sso: Sso) -> None:
    login = await (await sso.client.get("/admin/login")).text()
    assert 'id="sso"' in login and 'id="password"' not in login  # no password is set
    start = await sso.client.get("/admin/oidc/start?next=%2Fadmin%2Fquestions",
                                 allow_redirects=False)
    state_cookie = start.headers["Set-Cookie"]
    assert "HttpOnly" in state_cookie and "SameSite=Lax" in state_cookie
    assert "Path=/admin/oidc" in state_cookie
    await (await sso.client.get("/admin/login")).read()
    done = await sso.callback(await sso.consent("/admin/questions"))
    # A page that moves on by itself: a redirect in a chain that began at the provider's
    # site would go without the SameSite=Strict session cookie.
    assert done.status == 200
    assert '<meta http-equiv="refresh" content="0;url=/admin/questions">' in await done.text()
    page = await (await sso.client.get("/admin/questions")).text()
    assert "ada@example.com" in page and '<span class="role">admin</span>' in page
    query = sso.fake.authorize_queries[-1]
    assert query["code_challenge_method"] == "S256" and query["nonce"] and query["state"]
    assert query["redirect_uri"].endswith("/admin/oidc/callback")
    assert sso.fake.token_auth[-1] == "Basic"  # the secret went only to the token endpoint
    assert len(sso.fake.token_forms[-1]["code_verifier"]) >= 43


@pytest.mark.parametrize(("account", "role"), [
    (Account("bob@example.com"), "viewer"),  # by domain
    (Account("carol@partner.example", groups=["sift-admins"]), "admin"),  # by group claim
])
async def test_roles_come_from_domains_and_groups(sso: Sso, account: Account,
                                                  role: str) -> None:
    sso.fake.account = account
    assert (await sso.callback(await sso.consent())).status == 200
    page = await (await sso.client.get("/admin/")).text()
    assert f'<span class="role">{role}</span>' in page


@pytest.mark.parametrize(("attack", "sentence"), [
    ({"nonce": "a-nonce-from-another-sign-in"}, UNVERIFIED),
    ({"aud": "some-other-client"}, UNVERIFIED),
    ({"aud": "some-other-client", "azp": CLIENT_ID}, UNVERIFIED),  # azp cannot stand for aud
    ({"exp": 1_700_000_000, "iat": 1_699_999_000}, UNVERIFIED),  # long expired
    ({"iss": "https://evil.example"}, UNVERIFIED),
    ({"email": "mallory@evil.example"}, NOT_ALLOWED),
    ({"email": "eve@example.com", "email_verified": False}, "is not allowed"),
])
async def test_a_forged_or_unwelcome_token_signs_nobody_in(
        sso: Sso, attack: dict[str, Any], sentence: str) -> None:
    sso.fake.claims = attack
    refused = await sso.callback(await sso.consent())
    assert refused.status == 403
    assert sentence in unescape(await refused.text())
    assert "sift_admin=" not in refused.headers.get("Set-Cookie", "")
    assert not await sso.signed_in()


async def test_a_token_signed_with_another_key_is_refused(sso: Sso) -> None:
    sso.fake.signer = new_key()  # same kid, not the provider's published key
    refused = await sso.callback(await sso.consent())
    assert refused.status == 403 and UNVERIFIED in unescape(await refused.text())
    assert not await sso.signed_in()


async def test_a_rotated_signing_key_is_fetched_once_then_kept(sso: Sso) -> None:
    assert (await sso.callback(await sso.consent())).status == 200
    assert sso.fake.jwks_requests == 1
    await sso.sign_out()
    sso.fake.rotate()  # a new kid: the key set Sift holds has no such key
    assert (await sso.callback(await sso.consent())).status == 200 and await sso.signed_in()
    assert sso.fake.jwks_requests == 2
    await sso.sign_out()
    assert (await sso.callback(await sso.consent())).status == 200
    assert sso.fake.jwks_requests == 2  # the new set is kept, not read per sign-in


async def test_a_kid_the_provider_never_published_is_refused(sso: Sso) -> None:
    sso.fake.signer, sso.fake.signer_kid = new_key(), "attacker-key"
    refused = await sso.callback(await sso.consent())
    assert refused.status == 403 and UNVERIFIED in unescape(await refused.text())
    assert sso.fake.jwks_requests == 2  # looked again, as for a rotation: still unknown
    assert not await sso.signed_in()


@pytest.mark.parametrize("algorithm", ["none", "HS256"])
async def test_an_algorithm_outside_the_allowlist_is_refused_even_when_offered(
        sso: Sso, algorithm: str) -> None:
    # An unsigned token, or one keyed with the client secret: discovery offers the
    # algorithm, Sift still verifies with asymmetric ones only.
    sso.fake.algorithms, sso.fake.algorithm = ["RS256", algorithm], algorithm
    refused = await sso.callback(await sso.consent())
    assert refused.status == 403 and UNVERIFIED in unescape(await refused.text())
    assert not await sso.signed_in()


@pytest.mark.parametrize(("claims", "signed_in"), [
    ({"aud": [CLIENT_ID, "reporting-app"]}, False),  # several audiences, no azp
    ({"aud": [CLIENT_ID, "reporting-app"], "azp": "reporting-app"}, False),
    ({"aud": CLIENT_ID, "azp": "reporting-app"}, False),  # issued to another party
    ({"aud": [CLIENT_ID, "reporting-app"], "azp": CLIENT_ID}, True),
])
async def test_the_authorized_party_must_be_this_console(
        sso: Sso, claims: dict[str, Any], signed_in: bool) -> None:
    sso.fake.claims = claims
    answer = await sso.callback(await sso.consent())
    assert (answer.status == 200) is signed_in and await sso.signed_in() is signed_in
    if not signed_in:
        assert UNVERIFIED in unescape(await answer.text())


async def test_discovery_naming_another_issuer_is_refused(sso: Sso) -> None:
    sso.fake.issuer = "https://evil.example"
    start = await sso.client.get("/admin/oidc/start", allow_redirects=False)
    assert start.status == 502 and PROVIDER_SAID_NO in unescape(await start.text())
    assert sso.fake.authorize_queries == []
    sso.fake.issuer = None  # the provider fixed: the document is read again, not kept
    assert (await sso.callback(await sso.consent())).status == 200


async def test_a_secret_with_reserved_characters_is_form_encoded(
        embedder: LocalEmbedder, tmp_path: Path) -> None:
    # RFC 6749 §2.3.1: id and secret are form-encoded before the Basic header's base64.
    async with console_with_sso(embedder, tmp_path, secret="s3:cr+t%2F~x y") as sso:
        assert (await sso.callback(await sso.consent())).status == 200
        assert await sso.signed_in()


async def test_a_callback_with_the_wrong_state_is_refused(sso: Sso) -> None:
    path = await sso.consent()
    forged = re.sub(r"state=[^&]+", "state=attacker-chosen", path)
    refused = await sso.callback(forged)
    assert refused.status == 403 and NOT_STARTED in unescape(await refused.text())
    # A callback from another browser (no state cookie here) with the real state: refused.
    sso.client.session.cookie_jar.clear(lambda c: c.key == "sift_oidc")
    assert (await sso.callback(path)).status == 403
    assert not await sso.signed_in()
    assert sso.fake.token_forms == []  # no code was ever exchanged


async def test_a_replayed_code_is_refused(sso: Sso) -> None:
    path = await sso.consent()
    assert (await sso.callback(path)).status == 200 and await sso.signed_in()
    await sso.sign_out()
    replay = await sso.callback(path)  # the same callback again: its state is used up
    assert replay.status == 403 and NOT_STARTED in unescape(await replay.text())
    # The old code under a fresh state of the attacker's own: the provider refuses it.
    fresh = await sso.consent()
    old_code = re.search(r"code=([^&]+)", path)
    assert old_code
    mixed = re.sub(r"code=[^&]+", f"code={old_code.group(1)}", fresh)
    refused = await sso.callback(mixed)
    assert refused.status == 403 and PROVIDER_SAID_NO in unescape(await refused.text())
    assert not await sso.signed_in()


async def test_a_token_endpoint_answering_html_signs_nobody_in(sso: Sso) -> None:
    sso.fake.token_page = "<html><body>Maintenance</body></html>"
    refused = await sso.callback(await sso.consent())
    assert refused.status == 403 and PROVIDER_SAID_NO in unescape(await refused.text())
    assert not await sso.signed_in()


async def test_the_client_secret_reaches_no_log_and_no_page(
        sso: Sso, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    pages = [await (await sso.callback(await sso.consent())).text()]
    pages.append(await (await sso.client.get("/admin/")).text())
    sso.fake.claims = {"aud": "other"}
    pages.append(await (await sso.callback(await sso.consent())).text())
    assert caplog.records  # something was logged: the check below is not vacuous
    assert "single sign-on refused [ref" in caplog.text
    for text in (caplog.text, *pages):
        assert SECRET not in text


async def test_a_signed_in_person_asks_the_web_chat_as_their_email(sso: Sso) -> None:
    await sso.callback(await sso.consent("/"))
    page = await (await sso.client.get("/")).text()
    token = re.search(r'name="sift-csrf" content="([0-9a-f]+)"', page)
    assert token
    response = await sso.client.post("/chat/ask", json={"question": QUESTION,
                                                        "csrf": token.group(1)})
    assert response.status == 200
    await response.read()
    assert [a.email for a in sso.access.askers] == ["ada@example.com"]


async def test_an_unreachable_provider_gets_one_sentence(embedder: LocalEmbedder,
                                                         tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    root = web.Application()
    mount(root, db, Settings(admin={"oidc": oidc_settings("http://127.0.0.1:9")}), embedder,
          None)
    async with TestClient(TestServer(root)) as client:
        response = await client.get("/admin/oidc/start", allow_redirects=False)
        assert response.status == 502
        assert "The identity provider could not be reached" in await response.text()
    db.dispose()


@pytest.mark.parametrize(("fields", "named"), [
    ({"issuer": "http://idp.example.com", "client_id": "x"}, "SIFT_ADMIN__OIDC__ISSUER"),
    ({"issuer": "https://idp.example.com"}, "SIFT_ADMIN__OIDC__CLIENT_ID"),
])
def test_settings_that_cannot_work_are_named(fields: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as raised:
        check(OidcSettings(**fields))
    assert named in str(raised.value)


async def test_single_sign_on_in_a_real_browser(sso: Sso, browser: WebDriver) -> None:
    site = str(sso.client.server.make_url("")).rstrip("/")
    await run(browser.delete_all_cookies)
    (button,) = await open_page(browser, site + "/admin/questions", "#sso")
    await shot(browser, "admin", "sign-in-sso")
    await run(button.click)  # to the provider, which consents and sends the browser back
    (who,) = await wait_for(browser, "span.who")
    assert await run(lambda: who.text) == "ada@example.com"
    assert (await run(lambda: browser.current_url)).endswith("/admin/questions")
    assert len(sso.fake.token_forms) == 1  # one code, exchanged once
