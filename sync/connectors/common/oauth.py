"""An OAuth 2.0 token for a connector: one form POST to the platform's token endpoint."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping

import httpx

from rag.errors import SyncError


async def fetch_token(http: httpx.AsyncClient, url: str, form: Mapping[str, str], *,
                      label: str, hint: str) -> str:
    """The access token, or one sentence naming the source (`label`) and the settings to
    check (`hint`). The form holds secrets: it is never part of a message."""
    try:
        response = await http.post(url, data=dict(form), auth=httpx.Auth())  # no bearer token
    except httpx.HTTPError as exc:
        raise SyncError(f"token request to {url} failed: {type(exc).__name__}: {exc}",
                        user_message=f"{label} could not reach its token endpoint {url} "
                        f"({type(exc).__name__}).") from exc
    code, body = "", None
    with contextlib.suppress(ValueError, AttributeError):  # the body only names the cause
        body = response.json()
        code = str(body.get("error") or "") if isinstance(body, dict) else ""
    if response.status_code != 200:
        why = f"HTTP {response.status_code}" + (f" {code}" if code else "")
        raise SyncError(f"token request to {url}: {why}", user_message=f"{label}: the token "
                        f"endpoint refused the credentials ({why}); check {hint}.")
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise SyncError(f"token response of {url} has no access_token", user_message=f"{label}:"
                        f" the token endpoint {url} answered without an access token.")
    return token


class RenewingToken(httpx.Auth):
    """Bearer auth that asks for a new token when the platform answers 401: access tokens
    live about an hour, and a first sync of a large drive takes longer. `issue(refused)`
    fetches one ("" at first, then the token the platform refused, so a cache skips it); a
    refusal then is the one-sentence error of expired credentials."""

    def __init__(self, issue: Callable[[str], Awaitable[str]]) -> None:
        self._issue = issue
        self._token = ""
        self._lock = asyncio.Lock()

    async def renew(self, stale: str = "") -> str:
        """A fresh token, fetched once however many requests found `stale` refused."""
        async with self._lock:
            if not self._token or self._token == stale:
                self._token = await self._issue(stale)
            return self._token

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[
            httpx.Request, httpx.Response]:
        token = self._token or await self.renew()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {await self.renew(stale=token)}"
            yield request
