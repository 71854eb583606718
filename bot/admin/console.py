"""The console's aiohttp sub-application: sessions, CSRF, security headers, sign-in, rendering."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

import jinja2
from aiohttp import web

from bot.admin.auth import (
    ADMIN,
    DEVICE_DAYS,
    Credentials,
    LoginLimiter,
    Session,
    Sessions,
    Wait,
)
from bot.admin.oidc import Provider
from bot.proxy import client_of
from bot.settings import AdminSettings, Settings
from bot.webchat.app import Reader, conversation_key, visitor_of
from rag.ports import Embedder
from rag.safe_compare import same_secret
from storage.audit import AuditLog
from storage.db import Database
from storage.history import HistoryRepository

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
COOKIE, LOGIN_COOKIE = "sift_admin", "sift_admin_login"
DEVICE_COOKIE = "sift_admin_device"  # a browser that signed in before (bot/admin/auth.py)
PREFIX = "/admin"
OPEN_PATHS = ("/admin/login", "/admin/static/", "/admin/oidc/")
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY", "Cache-Control": "no-store",
}
WRONG_PASSWORD = "That password is not right."
STALE_FORM = "This form has expired: reload the page and try again."
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class SyncControl(Protocol):
    """What the console asks of `sift serve`'s sync scheduler."""

    def run_now(self, name: str) -> None: ...

    def next_run(self, name: str) -> datetime | None: ...


@dataclass
class Console:
    """Everything the pages read, built once by `mount`."""

    db: Database
    settings: Settings
    embedder: Embedder
    sync: SyncControl | None
    credentials: Credentials
    sessions: Sessions
    limiter: LoginLimiter
    templates: jinja2.Environment
    audit: AuditLog
    provider: Provider | None = None  # single sign-on, when SIFT_ADMIN__OIDC__ISSUER is set

    @property
    def admin(self) -> AdminSettings:
        return self.settings.admin


KEY = web.AppKey("console", Console)
SESSION = web.RequestKey("session", Session)


def templates() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=True)
    env.filters["stamp"] = lambda d: d.strftime("%Y-%m-%d %H:%M") if d else "-"
    env.filters["ms"] = lambda v: "-" if v is None else f"{float(v):,.0f}"
    env.filters["pct"] = lambda v: "-" if v is None else f"{v:.0%}"
    env.filters["num"] = lambda v: "-" if v is None else f"{v:,}"
    env.filters["grade"] = lambda v: "-" if v is None else f"{v:.2f}"
    env.filters["href"] = web_link
    env.filters["short_id"] = short_id
    return env


def short_id(value: str, keep: int = 8) -> str:
    """A long conversation id cut to what tells it apart: Teams' "19:3f2a…@thread.tacv2"."""
    local, at, domain = value.partition("@")
    if at and len(local) > keep + 3:
        return f"{local[:keep]}…@{domain}"
    return value if len(value) <= 24 else f"{value[:20]}…"


def web_link(url: str | None) -> str:
    """A document URL fit for href: http(s) only, so a synced `javascript:` link stays text."""
    return url if url and urlsplit(url).scheme in ("http", "https") else "#"


def render(request: web.Request, name: str, status: int = 200, **context: Any) -> web.Response:
    console = request.app[KEY]
    session: Session | None = request.get(SESSION)
    html = console.templates.get_template(name).render(
        session=session, path=request.path, is_admin=session is not None and
        session.role == ADMIN, **context)
    return web.Response(text=html, content_type="text/html", status=status)


def safe_next(target: str | None) -> str:
    """Only a path inside the console, or the web chat at /: a sign-in link cannot send
    anyone elsewhere."""
    target = target or ""
    parts = urlsplit(target)
    inside = parts.path in (PREFIX, "/") or parts.path.startswith(PREFIX + "/")
    if parts.scheme or parts.netloc or "\\" in target or not inside:
        return PREFIX + "/"
    return parts.path + (f"?{parts.query}" if parts.query else "")


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Headers on every response; a session on every page but sign-in; CSRF on every POST."""
    response = await _guarded(request, handler)
    response.headers.update(HEADERS)
    return response


async def _guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith(OPEN_PATHS):
        return await handler(request)
    console = request.app[KEY]
    session = await session_of(console, request)
    if session is None:
        wanted = request.path_qs if request.method == "GET" else PREFIX + "/"
        raise web.HTTPSeeOther(f"{PREFIX}/login?next={quote(wanted, safe='')}")
    request[SESSION] = session
    if request.method == "POST":
        form = await request.post()
        if not same_secret(str(form.get("csrf", "")), session.csrf):
            log.warning("console: refused a %s to %s without a valid CSRF token",
                        request.method, request.path)
            return render(request, "message.html", 403, title="Refused", message=STALE_FORM)
    return await handler(request)


def sees_restricted(request: web.Request) -> bool:
    """Admins see every document; a viewer sees restricted ones as "(restricted)"."""
    return bool(request[SESSION].role == ADMIN)


async def audit(request: web.Request, action: str, target: str = "", *, actor: str = "",
                before: Mapping[str, Any] | None = None,
                after: Mapping[str, Any] | None = None) -> None:
    """Record an admin action in the audit log: by the signed-in person (their email, else
    their role), from the real client's address. Called once the action is done, so a
    failed write does not undo it or turn its page into an error: it is logged, as an
    error with its cause, for the operator to see that the trail has a gap."""
    session: Session | None = request.get(SESSION)
    who = actor or (session.email or session.role if session is not None else "?")
    address = client_of(request).address
    try:
        await asyncio.to_thread(request.app[KEY].audit.record, who, action, target,
                                address=address, before=before, after=after)
    except Exception:
        log.exception("audit log: could not record %s on %r by %s from %s", action, target,
                      who, address)


def require_admin(request: web.Request) -> None:
    session: Session = request[SESSION]
    if session.role != ADMIN:
        raise web.HTTPForbidden(text="Only an admin may do this; you are signed in as a viewer.")


def secure_cookies(request: web.Request) -> bool:
    """Cookies go over HTTPS only when the request came over HTTPS (or the setting says
    always), so that a session opened through TLS is never sent in the clear."""
    return request.app[KEY].admin.secure_cookie or client_of(request).secure


def _set_cookie(request: web.Request, response: web.StreamResponse, name: str, value: str,
                max_age: int | None, path: str = PREFIX) -> None:
    response.set_cookie(name, value, path=path, httponly=True, samesite="Strict",
                        secure=secure_cookies(request), max_age=max_age)


async def open_session(request: web.Request, response: web.StreamResponse, role: str,
                       email: str = "") -> None:
    """Sign in: the session cookie covers the whole site, since the web chat at / accepts
    the console's sign-in (SameSite=Strict: no other site's page can send it)."""
    token, _ = await request.app[KEY].sessions.open(role, email)
    _set_cookie(request, response, COOKIE, token, None, path="/")


async def session_of(console: Console, request: web.Request) -> Session | None:
    return await console.sessions.get(request.cookies.get(COOKIE))


async def login_form(request: web.Request) -> web.StreamResponse:
    return login_page(request, "", 200)


def login_page(request: web.Request, error: str, status: int) -> web.Response:
    """The sign-in page: the password form when passwords are set, the single sign-on
    button when OIDC is; `error` is the one sentence saying why the last try failed."""
    console = request.app[KEY]
    token = secrets.token_urlsafe(24)  # double-submit: the form must echo the cookie
    response = render(request, "login.html", status, error=error, csrf=token,
                      next=safe_next(request.query.get("next")),
                      passwords=bool(console.credentials.hashes),
                      sso=console.provider is not None)
    _set_cookie(request, response, LOGIN_COOKIE, token, 600)
    return response


async def login(request: web.Request) -> web.StreamResponse:
    console = request.app[KEY]
    address = client_of(request).address  # the person's, not their proxy's (bot/proxy.py)
    wait = await console.limiter.wait(address, request.cookies.get(DEVICE_COOKIE))
    if wait.seconds > 0:
        log.warning("console: sign-in from %s refused for %.0fs: %s", address, wait.seconds,
                    "password sign-ins are backing off after many failures from many "
                    "addresses" if wait.everyone else "too many failures from this address")
        return login_page(request, _wait_sentence(wait), 429)
    form = await request.post()
    expected = request.cookies.get(LOGIN_COOKIE, "")
    if not expected or not same_secret(str(form.get("csrf", "")), expected):
        return login_page(request, STALE_FORM, 403)
    role = console.credentials.role_for(str(form.get("password", "")))
    if role is None:
        everyone = await console.limiter.failed(address)
        log.info("console: failed sign-in from %s (%d failures from all addresses in the "
                 "window)", address, everyone)
        await audit(request, "sign_in_failed", "password", actor="?")
        return login_page(request, WRONG_PASSWORD, 401)
    log.info("console: %s signed in from %s", role, address)
    await audit(request, "sign_in", "password", actor=role, after={"role": role})
    response = web.HTTPSeeOther(safe_next(str(form.get("next", ""))))
    await open_session(request, response, role)
    # This browser has signed in: strangers' failures elsewhere will not hold it back.
    _set_cookie(request, response, DEVICE_COOKIE, await console.limiter.remember_device(),
                DEVICE_DAYS * 86400, path=PREFIX + "/login")
    response.del_cookie(LOGIN_COOKIE, path=PREFIX)
    raise response


def _wait_sentence(wait: Wait) -> str:
    if wait.everyone:
        seconds = max(1, round(wait.seconds))
        return (f"Many sign-ins have failed lately, so sign-ins are slowed down: try again in "
                f"{seconds} second{'s' if seconds > 1 else ''}.")
    minutes = max(1, round(wait.seconds / 60))
    return (f"Too many sign-in attempts: try again in {minutes} "
            f"minute{'s' if minutes > 1 else ''}.")


async def logout(request: web.Request) -> web.StreamResponse:
    """Sign out: the session ends, and with it the web chat's conversation of this sign-in."""
    console = request.app[KEY]
    session = await session_of(console, request)
    visitor = visitor_of(request)
    if session is not None and visitor:
        await asyncio.to_thread(HistoryRepository(console.db).forget,
                                conversation_key(visitor, Reader(session.email,
                                                                 session.conversation)))
    await console.sessions.close(request.cookies.get(COOKIE))
    response = web.HTTPSeeOther(f"{PREFIX}/login")
    response.del_cookie(COOKIE, path="/")
    raise response
