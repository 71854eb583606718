"""Mounts the console under /admin when a password is configured; the route table."""

from __future__ import annotations

import logging

from aiohttp import web

from bot.admin import answers, channels, oidc, sso, tokens
from bot.admin.audit import audit_page
from bot.admin.auth import Credentials, LoginLimiter, Sessions
from bot.admin.console import (
    HERE,
    KEY,
    PREFIX,
    Console,
    SyncControl,
    guard,
    login,
    login_form,
    logout,
    session_of,
    templates,
)
from bot.admin.failures import failures
from bot.admin.gaps import INDEXER, GapIndexer, gaps_page
from bot.admin.ops import (
    channels_page,
    eval_chart,
    evaluation_page,
    source_documents_page,
    sources_page,
    sync_now,
)
from bot.admin.overview import overview_page
from bot.admin.pages import documents_page, question_page, questions_page, verify_document
from bot.settings import Settings
from bot.webchat.app import Gate, Reader
from rag.ports import Embedder
from storage.audit import AuditLog
from storage.db import Database
from storage.expiring import ExpiringStore

log = logging.getLogger(__name__)


def console_app(db: Database, settings: Settings, embedder: Embedder,
                sync: SyncControl | None) -> web.Application | None:
    """The console's sub-application; None when neither SIFT_ADMIN__PASSWORD nor
    SIFT_ADMIN__OIDC__ISSUER is set (ConfigError for an OIDC setting that cannot work)."""
    admin = settings.admin
    oidc.check(admin.oidc)
    credentials = Credentials.of(admin.password, admin.viewer_password)
    if not credentials.enabled and not admin.oidc.enabled:
        return None
    sub = web.Application(middlewares=[failures, guard])
    shared = ExpiringStore(db)  # what every replica must see: sessions, sign-ins under way
    provider = oidc.Provider(admin.oidc, shared) if admin.oidc.enabled else None
    sub[KEY] = Console(db, settings, embedder, sync, credentials,
                       Sessions(shared, admin.session_minutes * 60),
                       LoginLimiter(shared, admin.login_attempts, admin.login_window_s),
                       templates(), AuditLog(db), provider)
    if provider is not None:
        sub.router.add_get("/oidc/start", sso.start)
        sub.router.add_get("/oidc/callback", sso.callback)
    sub[INDEXER] = GapIndexer(db, embedder)
    sub.cleanup_ctx.append(sub[INDEXER].background)  # gap questions embedded as they come
    sub.router.add_get("/login", login_form)
    sub.router.add_post("/login", login)
    sub.router.add_post("/logout", logout)
    sub.router.add_get("/", overview_page)
    sub.router.add_get("/questions", questions_page)
    sub.router.add_get("/questions/{id}", question_page)
    sub.router.add_get("/gaps", gaps_page)
    sub.router.add_get("/documents", documents_page)
    sub.router.add_get("/sources", sources_page)
    sub.router.add_get("/sources/{name}/documents", source_documents_page)
    sub.router.add_post("/sources/{name}/sync", sync_now)
    sub.router.add_get("/evaluation", evaluation_page)
    sub.router.add_get("/evaluation/{name}/chart.png", eval_chart)
    sub.router.add_get("/audit", audit_page)
    sub.router.add_get("/channels", channels_page)
    sub.router.add_get("/channels/edit", channels.edit_form)
    sub.router.add_post("/channels", channels.save)
    sub.router.add_post("/channels/remove", channels.remove)
    sub.router.add_post("/documents/override", channels.override)
    sub.router.add_post("/documents/verify", verify_document)
    answers.add_routes(sub)
    tokens.add_routes(sub)
    sub.router.add_static("/static", HERE / "static")
    return sub


def mount(web_app: web.Application, db: Database, settings: Settings, embedder: Embedder,
          sync: SyncControl | None) -> web.Application | None:
    """Add /admin to `sift serve`'s web app when configured; the console's app if it was."""
    sub = console_app(db, settings, embedder, sync)
    if sub is None:
        log.info("admin console off (set SIFT_ADMIN__PASSWORD or SIFT_ADMIN__OIDC__ISSUER "
                 "to turn it on)")
        return None
    web_app.router.add_get(PREFIX, _to_console)  # before the sub-app, which would claim it
    web_app.add_subapp(PREFIX, sub)
    log.info("admin console at %s/", PREFIX)
    return sub


async def _to_console(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound(PREFIX + "/")


def chat_gate(sub: web.Application) -> Gate:
    """The web chat's sign-in beyond loopback: a console session (viewer or admin) lets a
    person in; they ask as the email their sign-in gave, else as the public."""
    console = sub[KEY]

    async def reader(request: web.Request) -> Reader | None:
        session = await session_of(console, request)
        return None if session is None else Reader(session.email, session.conversation)

    return Gate(reader, f"{PREFIX}/login?next=/")
