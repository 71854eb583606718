"""Sign-in and the attacker's requests: no session, forged cookies, CSRF, brute force, roles."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web
from yarl import URL

from bot.admin.console import KEY, STALE_FORM, WRONG_PASSWORD
from bot.admin.routes import mount
from bot.settings import Settings
from rag.embed import LocalEmbedder
from storage.channel_policies import ChannelPolicyRepository
from storage.db import Database
from storage.overrides import OverrideRepository
from tests.admin.conftest import ADMIN_PW, SECRET_DOC, VIEWER_PW, Console, csrf_of

PAGES = ["/admin/", "/admin/questions", "/admin/questions/1", "/admin/gaps",
         "/admin/documents", "/admin/sources", "/admin/evaluation", "/admin/channels",
         "/admin/evaluation/handbook/chart.png"]
ADMIN_PAGES = ["/admin/channels/edit", "/admin/channels/edit?platform=slack&channel=C0KEEP001"]
# Every form the console accepts, with values that would change something if let through.
ACTIONS = {
    "/admin/sources/handbook/sync": {},
    "/admin/channels": {"platform": "slack", "channel": "C0HELP009", "sources": "handbook",
                        "respond": "questions", "enabled": "on"},
    "/admin/channels/remove": {"platform": "slack", "channel": "C0KEEP001"},
    "/admin/documents/override": {"doc_id": "doc-3", "kind": "hide"},
}


@pytest.mark.parametrize("path", PAGES + ADMIN_PAGES)
async def test_every_page_needs_a_session(console: Console, path: str) -> None:
    response = await console.client.get(path, allow_redirects=False)
    assert response.status == 303
    assert response.headers["Location"].startswith("/admin/login?next=")


async def test_sign_in_returns_to_the_page_asked_for(console: Console) -> None:
    first = await console.client.get("/admin/questions?status=no_answer")
    assert first.url.path == "/admin/login"
    signed = await console.sign_in(next_=first.url.query["next"])
    assert signed.status == 303
    assert signed.headers["Location"] == "/admin/questions?status=no_answer"
    (cookie,) = [c for c in signed.headers.getall("Set-Cookie") if c.startswith("sift_admin=")]
    # The whole site: the web chat at / accepts the console's sign-in beyond loopback.
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/;" in cookie + ";"
    assert "Secure" not in cookie
    page = await console.client.get("/admin/questions?status=no_answer")
    assert page.status == 200 and "Questions" in await page.text()


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/admin/",
                                    "/elsewhere", "/admin\\..\\x"])
async def test_sign_in_never_sends_anyone_elsewhere(console: Console, target: str) -> None:
    signed = await console.sign_in(next_=target)
    assert signed.headers["Location"] == "/admin/"


async def test_wrong_password_is_one_sentence_without_a_hint(
        console: Console, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    response = await console.sign_in("guess")
    html = await response.text()
    assert response.status == 401 and WRONG_PASSWORD in html
    assert "viewer" not in html.lower() and "user" not in html.lower()
    assert "sift_admin=" not in response.headers.get("Set-Cookie", "")
    assert "guess" not in caplog.text and ADMIN_PW not in caplog.text


async def test_brute_force_is_rate_limited_even_for_the_right_password(
        console: Console) -> None:
    for _ in range(5):
        assert (await console.sign_in("wrong")).status == 401
    blocked = await console.sign_in(ADMIN_PW)
    assert blocked.status == 429
    assert "Too many sign-in attempts: try again in 5 minutes." in await blocked.text()


async def test_sign_in_without_the_form_token_is_refused(console: Console) -> None:
    await console.client.get("/admin/login")
    response = await console.client.post("/admin/login", allow_redirects=False,
                                         data={"csrf": "forged", "password": ADMIN_PW})
    assert response.status == 403 and STALE_FORM in await response.text()


async def test_a_forged_session_cookie_is_not_a_session(console: Console) -> None:
    console.client.session.cookie_jar.update_cookies({"sift_admin": "forged-token"})
    response = await console.client.get("/admin/questions", allow_redirects=False)
    assert response.status == 303 and response.headers["Location"].startswith("/admin/login")


async def test_an_expired_session_goes_back_to_sign_in_keeping_the_page(
        console: Console) -> None:
    await console.sign_in()
    store = console.app[KEY].sessions.store
    store.clock = lambda: datetime.now(UTC) + timedelta(days=1)  # long after the idle limit
    response = await console.client.get("/admin/documents?view=down", allow_redirects=False)
    assert response.status == 303
    location = URL(response.headers["Location"])
    assert location.path == "/admin/login"
    assert location.query["next"] == "/admin/documents?view=down"


def _untouched(console: Console) -> None:
    """None of ACTIONS took effect: no sync started, the policies and overrides as seeded."""
    assert not console.scheduler.scheduler.get_job("sync-now:handbook")
    policies = ChannelPolicyRepository(console.db)
    assert policies.get("slack", "C0HELP009") is None
    assert policies.get("slack", "C0KEEP001") is not None
    assert OverrideRepository(console.db).for_documents(["doc-3"]) == {}


@pytest.fixture
def kept_policy(console: Console) -> Console:
    ChannelPolicyRepository(console.db).put("slack", "C0KEEP001", "#keep", {"respond": "all"})
    return console


@pytest.mark.parametrize("path", [*ACTIONS, "/admin/logout"])
async def test_every_action_needs_a_session(kept_policy: Console, path: str) -> None:
    console = kept_policy
    await console.sign_in()  # a session elsewhere: this client's cookie is dropped below
    token = await console.csrf()
    console.client.session.cookie_jar.clear()
    response = await console.client.post(path, data={"csrf": token, **ACTIONS.get(path, {})},
                                         allow_redirects=False)
    assert response.status == 303
    assert response.headers["Location"].startswith("/admin/login?next=")
    _untouched(console)


@pytest.mark.parametrize("token", [None, "", "wrong"])
async def test_posts_without_the_session_csrf_token_are_refused(
        kept_policy: Console, token: str | None) -> None:
    console = kept_policy
    await console.sign_in()
    data = {} if token is None else {"csrf": token}
    for path in [*ACTIONS, "/admin/logout"]:
        response = await console.client.post(path, data={**ACTIONS.get(path, {}), **data},
                                             allow_redirects=False)
        assert response.status == 403, path
        assert STALE_FORM in await response.text()
    _untouched(console)
    assert (await console.client.get("/admin/", allow_redirects=False)).status == 200


async def test_every_action_is_refused_to_a_viewer(kept_policy: Console) -> None:
    console = kept_policy
    await console.sign_in(VIEWER_PW)
    token = await console.csrf()
    for path, values in ACTIONS.items():
        response = await console.client.post(path, data={"csrf": token, **values},
                                             allow_redirects=False)
        assert response.status == 403, path
        assert "Only an admin may do this" in await response.text(), path
    _untouched(console)


async def test_a_viewer_reads_but_cannot_sync(console: Console) -> None:
    assert (await console.sign_in(VIEWER_PW)).status == 303
    for path in PAGES:
        assert (await console.client.get(path)).status == 200, path
    for path in ADMIN_PAGES:
        assert (await console.client.get(path)).status == 403, path
    html = await (await console.client.get("/admin/sources")).text()
    assert "Sync now" not in html and "viewer" in html
    response = await console.client.post("/admin/sources/handbook/sync",
                                         data={"csrf": csrf_of(html)})
    assert response.status == 403
    assert "Only an admin may do this" in await response.text()


async def test_sign_out_ends_the_session(console: Console) -> None:
    await console.sign_in()
    token = await console.csrf()
    out = await console.client.post("/admin/logout", data={"csrf": token},
                                    allow_redirects=False)
    assert out.status == 303
    again = await console.client.get("/admin/", allow_redirects=False)
    assert again.status == 303


async def test_security_headers_on_every_response(console: Console) -> None:
    for path in ("/admin/login", "/admin/", "/admin/static/admin.css"):
        response = await console.client.get(path)
        assert "default-src 'self'" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Frame-Options"] == "DENY"


async def test_the_cookie_is_secure_behind_tls(seeded: Database, embedder: LocalEmbedder,
                                               tmp_path: object) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    root = web.Application()
    mount(root, seeded, Settings(admin={"password": "pw", "secure_cookie": True}), embedder,
          None)
    async with TestClient(TestServer(root)) as client:
        page = await client.get("/admin/login")
        assert "Secure" in page.headers["Set-Cookie"]


async def test_off_unless_a_password_is_set(seeded: Database, embedder: LocalEmbedder) -> None:
    settings = Settings(admin={"viewer_password": "only a viewer"})
    before = settings.admin.model_copy(deep=True)
    root = web.Application()
    assert mount(root, seeded, settings, embedder, None) is None
    assert settings.admin == before  # the settings are read, never rewritten


def test_the_passwords_are_kept_only_as_hashes(seeded: Database,
                                               embedder: LocalEmbedder) -> None:
    settings = Settings(admin={"password": ADMIN_PW, "viewer_password": VIEWER_PW})
    for shown in (repr(settings), str(settings), settings.model_dump_json(),
                  str(settings.model_dump())):  # hashed as they loaded: no text to drop
        assert ADMIN_PW not in shown and VIEWER_PW not in shown
    admin, viewer = settings.admin.password, settings.admin.viewer_password
    assert admin is not None and viewer is not None
    assert ADMIN_PW.encode() not in admin.salt + admin.digest + viewer.salt + viewer.digest
    sub = mount(web.Application(), seeded, settings, embedder, None)
    assert sub is not None
    assert settings.admin.password is admin and settings.admin.viewer_password is viewer
    console = sub[KEY]
    assert ADMIN_PW.encode() not in repr(console.credentials).encode()
    assert console.credentials.role_for(ADMIN_PW) == "admin"
    assert console.credentials.role_for(VIEWER_PW) == "viewer"
    assert console.credentials.role_for(ADMIN_PW + " ") is None


async def test_a_viewer_sees_restricted_documents_only_as_restricted(console: Console) -> None:
    await console.sign_in(VIEWER_PW)
    for path in ("/admin/questions/21", "/admin/documents?view=all", "/admin/gaps?window=90d"):
        html = await (await console.client.get(path)).text()
        assert "Layoff plan" not in html and "(restricted)" in html, path
        assert f"kb.example/{SECRET_DOC[1:]}\"" not in html, path
    await console.client.post("/admin/logout", data={"csrf": await console.csrf()})
    await console.sign_in(ADMIN_PW)
    html = await (await console.client.get("/admin/documents?view=all")).text()
    assert "Layoff plan 2027" in html
