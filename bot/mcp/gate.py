"""/mcp's door: the caller of each request, decided as the API decides it (a personal access
token, or an OAuth access token for /mcp), handed to the SDK's tools; else the spec's 401."""

from __future__ import annotations

import json

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.api.auth import Bearers, Unauthenticated, challenge
from bot.api.calls import Caller, CallRefused
from rag.logcontext import correlated

PLATFORM = "mcp"
TOKEN_ID = "sift_token_id"  # the claim the tools read a personal access token's id from


def caller_in(token: AccessToken | None) -> Caller | None:
    """The caller the gate let in, as the tools see it through the SDK's context."""
    if token is None or not token.subject:
        return None
    return Caller(PLATFORM, token.subject, int((token.claims or {}).get(TOKEN_ID, 0)))


class BearerGate:
    """Not the SDK's bearer middleware: that one answers every refusal "Authentication
    required"; this one says why in one sentence with a reference the log shares."""

    def __init__(self, app: ASGIApp, bearers: Bearers, resource: str, metadata_url: str
                 ) -> None:
        self._app = AuthContextMiddleware(app)
        self._bearers = bearers
        self._resource = resource
        self._metadata_url = metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "")
        with correlated():
            try:
                caller = await self._bearers.caller_of(header, PLATFORM, self._resource)
            except Unauthenticated as exc:
                www = challenge(exc.error, exc.sentence, self._metadata_url)
                await _reply(send, 401, {"error": exc.error, "error_description": exc.sentence},
                             www)
                return
            except CallRefused as exc:
                await _reply(send, exc.status, {"error": "temporarily_unavailable",
                                                "error_description": exc.sentence})
                return
        secret = header.partition(" ")[2].strip()
        scope["user"] = AuthenticatedUser(AccessToken(
            token=secret, client_id=f"sift-{caller.platform}", scopes=[],
            subject=caller.email, claims={TOKEN_ID: caller.token_id}))
        await self._app(scope, receive, send)


async def _reply(send: Send, status: int, body: dict[str, str], www: str = "") -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(data)).encode())]
    if www:
        headers.append((b"www-authenticate", www.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
