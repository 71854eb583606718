"""A local fake of the Bot Connector service that Teams activities name in `serviceUrl`.

Real HTTP: the bot's replies arrive as POST /v3/conversations/{id}/activities[/{replyToId}]
(PUT for updates), are recorded, and get an id back. Failures can be scripted (429 with
Retry-After, 502, ...) for the next request or for the next of one kind (a streaming update).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer


@dataclass
class Received:
    method: str
    conversation_id: str
    reply_to: str | None
    body: dict[str, Any]
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)
    id: str = ""

    @property
    def type(self) -> str:
        return str(self.body.get("type", ""))

    @property
    def text(self) -> str:
        return str(self.body.get("text", ""))

    def entities(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.body.get("entities") or [] if e.get("type") == kind]

    @property
    def stream_info(self) -> dict[str, Any] | None:
        found = self.entities("streaminfo")
        return found[0] if found else None


@dataclass
class Failure:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=lambda: {
        "error": {"code": "ServiceError", "message": "scripted failure"}})
    matches: Callable[[Received], bool] | None = None  # None: the next request, whatever it is


def stream_type(kind: str) -> Callable[[Received], bool]:
    """Requests in Teams' streaming protocol of one kind: informative, streaming or final."""
    return lambda r: r.stream_info is not None and r.stream_info.get("streamType") == kind


class FakeConnector(LocalServer):
    """Routes live under `prefix` like Teams' regional service URLs (…/amer/v3/…)."""

    def __init__(self, prefix: str = "/amer") -> None:
        super().__init__()
        self.prefix = prefix
        self.received: list[Received] = []
        self.refused: list[Received] = []  # requests answered with a scripted failure
        self.failures: deque[Failure] = deque()
        self.delays: list[tuple[Callable[[Received], bool], float]] = []
        self._ids = itertools.count(1700000009001)
        self._changed = asyncio.Condition()
        base = f"{prefix}/v3/conversations/{{conversation_id}}/activities"
        self.app.router.add_post(base, self._activity)
        self.app.router.add_post(base + "/{activity_id}", self._activity)
        self.app.router.add_put(base + "/{activity_id}", self._activity)
        # Inline images (with the bot's token) and shared files' downloadUrl (without one)
        self.attachments: dict[str, bytes] = {}
        self.fetched: list[tuple[str, str]] = []  # (path, Authorization header or "")
        self.app.router.add_get(f"{prefix}/v3/attachments/{{id}}/views/original", self._file)
        self.app.router.add_get("/personal/u/_layouts/15/download.aspx", self._file)
        self.created: list[dict[str, Any]] = []  # POST /v3/conversations bodies
        self.app.router.add_post(f"{prefix}/v3/conversations", self._create)

    @property
    def service_url(self) -> str:
        return f"{self.url}{self.prefix}/"

    def fail_next(self, status: int, *, retry_after: str | None = None, times: int = 1) -> None:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self.failures.extend(Failure(status, headers) for _ in range(times))

    def fail_when(self, matches: Callable[[Received], bool], status: int, *,
                  code: str = "ServiceError", times: int = 1) -> None:
        """Refuse the next `times` requests that `matches` picks, whenever they come."""
        body = {"error": {"code": code, "message": "scripted failure"}}
        self.failures.extend(Failure(status, body=body, matches=matches) for _ in range(times))

    def slow_when(self, matches: Callable[[Received], bool], seconds: float) -> None:
        """Reply to the requests `matches` picks only after `seconds` (they count as received
        at once), as the Bot Connector does on a bad day."""
        self.delays.append((matches, seconds))

    def add_image(self, data: bytes) -> str:
        """An image someone pasted: its contentUrl on this Bot Connector."""
        key = f"0-eus-d1-{len(self.attachments) + 1:032x}"
        self.attachments[key] = data
        return f"{self.service_url}v3/attachments/{key}/views/original"

    def add_download(self, data: bytes) -> str:
        """A shared file's pre-authorised downloadUrl (SharePoint's download.aspx)."""
        key = f"{len(self.attachments) + 1:08d}"
        self.attachments[key] = data
        return f"{self.url}/personal/u/_layouts/15/download.aspx?UniqueId={key}&tempauth=x"

    async def _create(self, request: web.Request) -> web.Response:
        """A personal chat opened by the bot: Teams answers with the chat's id (the one it
        already has with that person, or a new one)."""
        body = await request.json()
        self.created.append(body)
        member = body["members"][0]["id"]
        return web.json_response({"id": f"a:personal-{member}"}, status=201)

    async def _file(self, request: web.Request) -> web.Response:
        key = request.match_info.get("id") or request.query.get("UniqueId", "")
        self.fetched.append((request.path, request.headers.get("Authorization", "")))
        if key not in self.attachments:
            return web.json_response({"error": {"code": "NotFound"}}, status=404)
        return web.Response(body=self.attachments[key], content_type="application/octet-stream")

    def of_type(self, kind: str) -> list[Received]:
        return [r for r in self.received if r.type == kind]

    @property
    def messages(self) -> list[Received]:
        return self.of_type("message")

    async def wait_for(self, done: Callable[[FakeConnector], bool],
                       timeout_s: float = 20.0) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: done(self)), timeout_s)

    async def wait_for_messages(self, count: int, timeout_s: float = 20.0) -> list[Received]:
        await self.wait_for(lambda c: len(c.messages) >= count, timeout_s)
        return self.messages

    async def _activity(self, request: web.Request) -> web.Response:
        record = Received(request.method, request.match_info["conversation_id"],
                          request.match_info.get("activity_id"), await request.json(),
                          dict(request.headers))
        failure = next((f for f in self.failures if f.matches is None or f.matches(record)),
                       None)
        if failure is not None:
            self.failures.remove(failure)
            self.refused.append(record)
            return web.json_response(failure.body, status=failure.status,
                                     headers=failure.headers)
        record.id = str(next(self._ids))
        async with self._changed:
            self.received.append(record)
            self._changed.notify_all()
        await asyncio.sleep(sum(seconds for matches, seconds in self.delays if matches(record)))
        return web.json_response({"id": record.id}, status=201)
