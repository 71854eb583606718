"""Microsoft Entra group membership through Graph's checkMemberGroups (an app-only token)."""

from __future__ import annotations

import contextlib
from typing import Any

import httpx

from bot.permissions.slack_identity import LookupFailed
from sync.connectors.common.entra import EntraError, EntraNames, EntraToken
from sync.connectors.common.microsoft import GRAPH_URL

MAX_IDS_PER_CALL = 20  # checkMemberGroups' documented limit
# The Teams bot's app registration is the one that reads Graph.
NAMES = EntraNames(tenant="SIFT_TEAMS_TENANT_ID", client_id="SIFT_TEAMS_APP_ID",
                   secret="SIFT_TEAMS_APP_PASSWORD", certificate="SIFT_TEAMS__CERTIFICATE_PFX",
                   authority="SIFT_PERMISSIONS__LOGIN_URL")


class GraphMembership:
    """Which of the declared Entra group ids a user (AAD object id) is a member of."""

    def __init__(self, token: EntraToken, group_ids: frozenset[str],
                 graph_url: str = GRAPH_URL,
                 timeout_s: float = 10.0) -> None:
        self._token = token
        self._group_ids = sorted(group_ids)
        self._url = graph_url.rstrip("/")
        self._http = httpx.AsyncClient(timeout=timeout_s)

    async def groups_of(self, object_id: str) -> frozenset[str]:
        if not self._group_ids or not object_id:
            return frozenset()
        try:
            token = await self._token.get()  # msal's cache: a request only near expiry
        except EntraError as exc:
            raise LookupFailed(f"the Graph token request failed: {exc} ({exc.sentence})") \
                from None
        url = f"{self._url}/users/{object_id}/checkMemberGroups"
        found: set[str] = set()
        for start in range(0, len(self._group_ids), MAX_IDS_PER_CALL):
            body = await self._json("checkMemberGroups", self._http.post(
                url, json={"groupIds": self._group_ids[start:start + MAX_IDS_PER_CALL]},
                headers={"Authorization": f"Bearer {token}"}))
            found.update(str(v) for v in body.get("value") or [])
        return frozenset(found)

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
