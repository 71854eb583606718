"""Microsoft Entra group membership through Graph's checkMemberGroups (client credentials)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from bot.permissions.slack_identity import LookupFailed

GRAPH_SCOPE = "https://graph.microsoft.com/.default"
MAX_IDS_PER_CALL = 20  # checkMemberGroups' documented limit


@dataclass(frozen=True)
class GraphCredentials:
    tenant: str
    client_id: str
    secret: str
    graph_url: str = "https://graph.microsoft.com/v1.0"
    login_url: str = "https://login.microsoftonline.com"


class GraphMembership:
    """Which of the declared Entra group ids a user (AAD object id) is a member of."""

    def __init__(self, credentials: GraphCredentials, group_ids: frozenset[str],
                 timeout_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._c = credentials
        self._group_ids = sorted(group_ids)
        self._http = httpx.AsyncClient(timeout=timeout_s)
        self._clock = clock
        self._token = ""
        self._token_until = 0.0

    async def groups_of(self, object_id: str) -> frozenset[str]:
        if not self._group_ids or not object_id:
            return frozenset()
        token = await self._access_token()
        url = f"{self._c.graph_url.rstrip('/')}/users/{object_id}/checkMemberGroups"
        found: set[str] = set()
        for start in range(0, len(self._group_ids), MAX_IDS_PER_CALL):
            body = await self._json("checkMemberGroups", self._http.post(
                url, json={"groupIds": self._group_ids[start:start + MAX_IDS_PER_CALL]},
                headers={"Authorization": f"Bearer {token}"}))
            found.update(str(v) for v in body.get("value") or [])
        return frozenset(found)

    async def _access_token(self) -> str:
        if self._token and self._clock() < self._token_until:
            return self._token
        url = f"{self._c.login_url.rstrip('/')}/{self._c.tenant}/oauth2/v2.0/token"
        body = await self._json("the Graph token request", self._http.post(url, data={
            "client_id": self._c.client_id, "client_secret": self._c.secret,
            "scope": GRAPH_SCOPE, "grant_type": "client_credentials"}))
        token = str(body.get("access_token") or "")
        if not token:
            raise LookupFailed("the Graph token response has no access_token")
        # Renew a minute early so a token never expires between check and use.
        self._token_until = self._clock() + float(body.get("expires_in") or 0) - 60
        self._token = token
        return token

    @staticmethod
    async def _json(what: str, request: Any) -> dict[str, Any]:
        try:
            response = await request
        except httpx.HTTPError as exc:
            raise LookupFailed(f"{what} failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            code = ""
            with contextlib.suppress(ValueError, AttributeError):  # the body is a hint only
                code = str((response.json().get("error") or {}).get("code", ""))
            raise LookupFailed(f"{what} failed: HTTP {response.status_code} {code}".strip())
        try:
            body = response.json()
        except ValueError as exc:
            raise LookupFailed(f"{what} returned no JSON") from exc
        return body if isinstance(body, dict) else {}

    async def aclose(self) -> None:
        await self._http.aclose()
