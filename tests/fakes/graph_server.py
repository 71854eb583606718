"""A local fake of Microsoft Graph's checkMemberGroups and the Entra client-credentials token."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer

TENANT = "tenant-1"
CLIENT_ID = "app-id-1"
SECRET = "app-secret-1"
TOKEN = "graph-token-1"


class FakeGraph(LocalServer):
    """`memberships` maps a user's object id to the group ids they are (transitively) in."""

    def __init__(self) -> None:
        super().__init__()
        self.memberships: dict[str, set[str]] = {}
        self.requests: list[dict[str, Any]] = []
        self.fail_status = 0  # set to e.g. 503 to make checkMemberGroups fail
        self.app.router.add_post("/login/{tenant}/oauth2/v2.0/token", self._token)
        self.app.router.add_post("/v1.0/users/{oid}/checkMemberGroups", self._check)

    @property
    def graph_url(self) -> str:
        return f"{self.url}/v1.0"

    @property
    def login_url(self) -> str:
        return f"{self.url}/login"

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if request.match_info["tenant"] != TENANT or form.get("client_id") != CLIENT_ID \
                or form.get("client_secret") != SECRET:
            return web.json_response({"error": "invalid_client", "error_description":
                                      "AADSTS7000215: Invalid client secret provided."},
                                     status=401)
        return web.json_response({"token_type": "Bearer", "expires_in": 3599,
                                  "ext_expires_in": 3599, "access_token": TOKEN})

    async def _check(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"oid": request.match_info["oid"], **body})
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"error": {"code": "InvalidAuthenticationToken",
                                                "message": "Access token is empty."}},
                                     status=401)
        if self.fail_status:
            return web.json_response({"error": {"code": "serviceNotAvailable",
                                                "message": "Service unavailable."}},
                                     status=self.fail_status)
        ids = body.get("groupIds") or []
        if len(ids) > 20:
            return web.json_response({"error": {"code": "Request_BadRequest",
                                                "message": "Too many group ids."}}, status=400)
        mine = self.memberships.get(request.match_info["oid"], set())
        return web.json_response({
            "@odata.context": "https://graph.microsoft.com/v1.0/$metadata"
                              "#Collection(Edm.String)",
            "value": [i for i in ids if i in mine]})
