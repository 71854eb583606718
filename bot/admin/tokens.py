"""The console's Tokens page: personal access tokens listed with their state, made "as EMAIL"
(the secret shown once, on the page that made it) and revoked; admins only, audited."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from aiohttp import web

from bot.admin.console import KEY, PREFIX, SESSION, audit, render, require_admin
from storage.columns import utc_now
from storage.retention import parse_duration
from storage.tokens import MadeToken, TokenRepository

log = logging.getLogger(__name__)
DEFAULT_EXPIRY = "90d"  # as `sift tokens create`


def _tokens(request: web.Request) -> TokenRepository:
    return TokenRepository(request.app[KEY].db)


async def tokens_page(request: web.Request, *, made: MadeToken | None = None,
                      errors: dict[str, str] | None = None,
                      values: dict[str, str] | None = None, status: int = 200
                      ) -> web.StreamResponse:
    require_admin(request)
    tokens = await asyncio.to_thread(_tokens(request).list)
    response = render(request, "tokens.html", status, tokens=tokens, now=utc_now(), made=made,
                      errors=errors or {}, revoked=request.query.get("revoked", ""),
                      values=values or {"email": "", "label": "", "expires": DEFAULT_EXPIRY})
    # The page that shows a secret must not stay in a cache or the browser's history store.
    response.headers["Cache-Control"] = "no-store"
    return response


async def _show(request: web.Request) -> web.StreamResponse:
    return await tokens_page(request)


def _checked(values: dict[str, str]) -> tuple[str, timedelta | None, dict[str, str]]:
    """The email and expiry of the form, and a sentence per field that is wrong."""
    errors: dict[str, str] = {}
    email = values["email"].strip()
    if "@" not in email or any(c.isspace() for c in email):
        errors["email"] = "Give the email address of the person the token acts as."
    expires: timedelta | None = None
    if values["expires"].strip().lower() != "never":
        try:
            expires = parse_duration(values["expires"])
        except ValueError:
            errors["expires"] = "Give a duration such as 30d or 12h, or never."
    return email, expires, errors


async def create(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    form = await request.post()
    values = {k: str(form.get(k, "")) for k in ("email", "label", "expires")}
    email, expires, errors = _checked(values)
    if errors:
        return await tokens_page(request, errors=errors, values=values, status=400)
    session = request[SESSION]
    made = await asyncio.to_thread(_tokens(request).create, email, expires_in=expires,
                                   label=values["label"].strip()[:200],
                                   created_by=session.email or session.role)
    log.info("console: an admin made token %d acting as %s", made.token.id, email)
    await audit(request, "token_created", f"token {made.token.id}", after={
        "email": email, "label": made.token.label, "expires_at": made.token.expires_at
        .isoformat() if made.token.expires_at else None})
    return await tokens_page(request, made=made)


async def revoke(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    raw = request.match_info["id"]
    token = await asyncio.to_thread(_tokens(request).revoke, int(raw)) if raw.isdigit() \
        else None
    if token is None:
        return render(request, "message.html", 404, title="No such token",
                      message="There is no such token; the list shows every one.")
    log.info("console: an admin revoked token %d (%s)", token.id, token.email)
    await audit(request, "token_revoked", f"token {token.id}", before={"email": token.email})
    raise web.HTTPSeeOther(f"{PREFIX}/tokens?revoked={token.id}")


def add_routes(sub: web.Application) -> None:
    sub.router.add_get("/tokens", _show)
    sub.router.add_post("/tokens", create)
    sub.router.add_post("/tokens/{id}/revoke", revoke)
