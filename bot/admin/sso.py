"""The console's single sign-on routes: start at the provider, come back to the callback."""

from __future__ import annotations

import logging
import secrets

from aiohttp import web

from bot.admin.console import (
    KEY,
    PREFIX,
    audit,
    login_page,
    open_session,
    render,
    safe_next,
    secure_cookies,
)
from bot.admin.oidc import Provider, Refused, Unreachable
from bot.proxy import base_url, client_of

log = logging.getLogger(__name__)
STATE_COOKIE = "sift_oidc"
SSO = PREFIX + "/oidc"
CALLBACK = SSO + "/callback"
UNREACHABLE = "The identity provider could not be reached; try again in a minute."


def _provider(request: web.Request) -> Provider:
    provider = request.app[KEY].provider
    if provider is None:
        raise web.HTTPNotFound(text="Single sign-on is not configured (SIFT_ADMIN__OIDC__ISSUER).")
    return provider


async def start(request: web.Request) -> web.StreamResponse:
    """Send the browser to the provider, remembering state, nonce and PKCE verifier here."""
    console, provider = request.app[KEY], _provider(request)
    redirect_uri = (console.admin.oidc.redirect_url
                    or base_url(request, console.settings.public_url) + CALLBACK)
    try:
        state, url = await provider.start(redirect_uri, safe_next(request.query.get("next")))
    except Refused as refused:
        return await _refused(request, refused.sentence, str(refused), 502)
    except Unreachable as exc:
        return await _refused(request, UNREACHABLE, str(exc), 502)
    response = web.HTTPSeeOther(url)
    # Lax, not Strict: the provider's redirect back is a navigation from another site.
    response.set_cookie(STATE_COOKIE, state, path=SSO, httponly=True, samesite="Lax",
                        secure=secure_cookies(request), max_age=600)
    raise response


async def callback(request: web.Request) -> web.StreamResponse:
    """Check state, exchange the code, verify the ID token, then open a session."""
    provider = _provider(request)
    try:
        pending = await provider.take(request.query.get("state", ""),
                                request.cookies.get(STATE_COOKIE, ""))
        if "error" in request.query:
            raise Refused("The identity provider did not sign you in: please start again.",
                          f"the provider answered error={request.query['error'][:80]!r}")
        person = await provider.finish(pending, request.query.get("code", ""))
    except Refused as refused:
        return await _refused(request, refused.sentence, str(refused), 403)
    except Unreachable as exc:
        return await _refused(request, UNREACHABLE, str(exc), 502)
    log.info("console: %s signed in through single sign-on as %s from %s", person.role,
             person.email or "?", client_of(request).address)
    await audit(request, "sign_in", "single sign-on", actor=person.email or person.role,
                after={"role": person.role})
    # A page that moves on by itself rather than a redirect: the browser arrived from the
    # provider's site, and would leave the SameSite=Strict session cookie off a redirect
    # in that chain; the page's own navigation is same-site, so the cookie goes along.
    response = render(request, "continue.html", target=pending.next)
    await open_session(request, response, person.role, person.email)
    response.del_cookie(STATE_COOKIE, path=SSO)
    return response


async def _refused(request: web.Request, sentence: str, cause: str,
                   status: int) -> web.Response:
    reference = secrets.token_hex(4)
    log.warning("console: single sign-on refused [ref %s]: %s", reference, cause)
    await audit(request, "sign_in_failed", "single sign-on", actor="?",
                after={"reason": cause[:200], "reference": reference})
    response = login_page(request, f"{sentence} (Reference {reference}.)", status)
    response.del_cookie(STATE_COOKIE, path=SSO)
    return response
