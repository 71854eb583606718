"""A local fake of Microsoft Graph's checkMemberGroups, beside a fake Entra for its tokens."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests.fakes.entra_server import CLIENT_ID, SECRET, TENANT, TOKEN, FakeEntra
from tests.fakes.http import LocalServer

__all__ = ["CLIENT_ID", "SECRET", "TENANT", "TOKEN", "FakeGraph"]


class GraphWithEntra(LocalServer):
    """A fake Microsoft Graph beside the fake Entra that issues its app tokens: both start and
    stop together; `graph_url` and `login_url` are what a Graph client is pointed at."""

    def __init__(self) -> None:
        super().__init__()
        self.entra = FakeEntra()

    async def start(self) -> str:
        await self.entra.start()
        return await super().start()

    async def stop(self) -> None:
        await super().stop()
        await self.entra.stop()

    @property
    def graph_url(self) -> str:
        return f"{self.url}/v1.0"

    @property
    def login_url(self) -> str:
        return self.entra.url


class FakeGraph(GraphWithEntra):
    """`memberships` maps a user's object id to the group ids they are (transitively) in."""

    def __init__(self) -> None:
        super().__init__()
        self.memberships: dict[str, set[str]] = {}
        self.requests: list[dict[str, Any]] = []
        self.fail_status = 0  # set to e.g. 503 to make checkMemberGroups fail
        self.app.router.add_post("/v1.0/users/{oid}/checkMemberGroups", self._check)

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
