"""Who a bearer token is: a personal access token's email, or an OAuth access token's from
the console's OpenID provider, checked on every call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from aiohttp import web

from bot.api.calls import Caller, CallRefused
from bot.api.models import ResourceMetadata
from rag.logcontext import current_correlation_id
from storage.tokens import PREFIX, AccessToken

if TYPE_CHECKING:
    from bot.api.oauth import OAuthTokens

log = logging.getLogger(__name__)

NO_TOKEN = ("This needs a personal access token: send `Authorization: Bearer sift_pat_…` "
            "(`sift tokens create --as EMAIL` makes one).")
BAD_TOKEN = ("The access token is not valid: it is unknown, expired or revoked; ask for a new "
             "one (`sift tokens create`).")
NO_BEARER = ("This needs a bearer token: sign in through your tool (OAuth, with this Sift's "
             "identity provider), or send a personal access token (`sift tokens create`).")
BAD_OAUTH = ("The access token was not accepted (expired, or not issued for this Sift); "
             "sign in again (reference {ref}).")
PROVIDER_DOWN = ("The identity provider could not be reached to check the access token; try "
                 "again in a minute (reference {ref}).")


class TokenCheck(Protocol):
    """storage.tokens.TokenRepository: the active token a secret belongs to, else None."""

    def verify(self, secret: str) -> AccessToken | None: ...


class Unauthenticated(Exception):
    def __init__(self, sentence: str, error: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.error = error  # RFC 6750's code: invalid_request, invalid_token


def bearer_of(header: str) -> str:
    """The token of an `Authorization: Bearer …` header; "" for anything else."""
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class Bearers:
    """Both kinds of bearer token: a personal access token (`sift_pat_…`), else, where an
    OpenID provider is configured, an OAuth access token for the resource called."""

    def __init__(self, tokens: TokenCheck, oauth: OAuthTokens | None = None) -> None:
        self.tokens = tokens
        self.oauth = oauth

    async def caller_of(self, header: str, platform: str, resource: str) -> Caller:
        """The caller an Authorization header names; Unauthenticated when it names none,
        CallRefused (503) when the provider cannot be asked."""
        secret = bearer_of(header)
        if not secret:
            raise Unauthenticated(NO_TOKEN if self.oauth is None else NO_BEARER,
                                  "invalid_request")
        if self.oauth is not None and not secret.startswith(PREFIX):
            return Caller(platform, await self._oauth_email(secret, platform, resource), 0)
        token = await asyncio.to_thread(self.tokens.verify, secret)
        if token is None:
            log.info("%s: refused a bearer token that is unknown, expired or revoked", platform)
            raise Unauthenticated(BAD_TOKEN, "invalid_token")
        return Caller(platform, token.email, token.id)

    async def _oauth_email(self, secret: str, platform: str, resource: str) -> str:
        from bot.api.oauth import OAuthRefused, ProviderUnreachable

        assert self.oauth is not None
        ref = current_correlation_id()
        try:
            return await self.oauth.email_of(secret, resource)
        except OAuthRefused as exc:  # the cause only: the token itself is never logged
            log.info("%s: refused an OAuth access token for %s [ref %s]: %s", platform,
                     resource, ref, exc)
            raise Unauthenticated(BAD_OAUTH.format(ref=ref), "invalid_token") from None
        except ProviderUnreachable as exc:
            log.warning("%s: could not check an OAuth access token [ref %s]: %s", platform,
                        ref, exc)
            raise CallRefused(503, PROVIDER_DOWN.format(ref=ref), ref) from None


def challenge(error: str, sentence: str, metadata_url: str) -> str:
    """The WWW-Authenticate header of a 401 (RFC 6750, with RFC 9728's resource_metadata)."""
    quoted = sentence.replace("\\", "\\\\").replace('"', "'")
    parts = ['realm="sift"', f'resource_metadata="{metadata_url}"']
    if error != "invalid_request":  # RFC 6750 §3.1: no error code when no token was sent
        parts += [f'error="{error}"', f'error_description="{quoted}"']
    return "Bearer " + ", ".join(parts)


WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_url(base_url: str, resource_path: str) -> str:
    """RFC 9728 §3.1: the well-known path inserted before the resource's own path."""
    return f"{base_url.rstrip('/')}{WELL_KNOWN}{resource_path}"


def metadata_handler(base_url: str, resource_path: str, issuer: str
                     ) -> Callable[[web.Request], Awaitable[web.Response]]:
    """GET of the protected resource metadata of `resource_path` (/mcp, /api/v1)."""
    document = ResourceMetadata(resource=base_url.rstrip("/") + resource_path,
                                authorization_servers=[issuer] if issuer else None)

    async def serve(request: web.Request) -> web.Response:
        return web.json_response(text=document.model_dump_json(exclude_none=True),
                                 headers={"Access-Control-Allow-Origin": "*"})

    return serve
