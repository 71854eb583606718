"""Who a bearer token is: a personal access token's email, checked on every call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from aiohttp import web

from bot.api.calls import Caller
from bot.api.models import ResourceMetadata
from storage.tokens import AccessToken

log = logging.getLogger(__name__)

NO_TOKEN = ("This needs a personal access token: send `Authorization: Bearer sift_pat_…` "
            "(`sift tokens create --as EMAIL` makes one).")
BAD_TOKEN = ("The access token is not valid: it is unknown, expired or revoked; ask for a new "
             "one (`sift tokens create`).")


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


async def caller_of(header: str, tokens: TokenCheck, platform: str) -> Caller:
    """The caller an Authorization header names; Unauthenticated when it names none."""
    secret = bearer_of(header)
    if not secret:
        raise Unauthenticated(NO_TOKEN, "invalid_request")
    token = await asyncio.to_thread(tokens.verify, secret)
    if token is None:
        log.info("%s: refused a bearer token that is unknown, expired or revoked", platform)
        raise Unauthenticated(BAD_TOKEN, "invalid_token")
    return Caller(platform, token.email, token.id)


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
