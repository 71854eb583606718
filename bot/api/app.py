"""Routes of the HTTP API: ask (JSON, or server-sent events), search, a document, a vote,
and the OpenAPI description; every call as the person its bearer token names."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from bot.api.auth import (
    WELL_KNOWN,
    Bearers,
    Unauthenticated,
    challenge,
    metadata_handler,
    metadata_url,
)
from bot.api.calls import Caller, CallRefused, Calls
from bot.api.models import (
    AskRequest,
    AskResult,
    DocumentOut,
    PassageOut,
    SearchRequest,
    SearchResult,
    VoteRequest,
    VoteResult,
)
from bot.api.openapi import openapi_document
from bot.api.problems import invalid_input, problem
from bot.chat.flow import ChatFlow
from bot.chat.tasks import Background
from rag import messages
from rag.logcontext import correlated
from rag.types import AnswerStatus, Mode

log = logging.getLogger(__name__)

PLATFORM = "api"
PREFIX = "/api/v1"
M = TypeVar("M", bound=BaseModel)
Handler = Callable[[web.Request, Caller], Awaitable[web.StreamResponse]]


class Api:
    """`mount` adds /api/v1/* and its resource metadata, where a 401 points (how to get a
    token; the console's OpenID provider when one is configured)."""

    def __init__(self, flow: ChatFlow, bearers: Bearers, *, base_url: str, issuer: str = "",
                 max_in_flight: int = 0) -> None:
        self._calls = Calls(flow, Background("HTTP API", limit=max_in_flight))
        self._bearers = bearers
        self._base_url = base_url
        self._resource = base_url.rstrip("/") + PREFIX  # an OAuth token's audience
        self._metadata_url = metadata_url(base_url, PREFIX)
        self._metadata = metadata_handler(base_url, PREFIX, issuer)

    async def start(self) -> None:
        return None

    async def drain(self, timeout_s: float = 30.0) -> None:
        await self._calls.background.drain(timeout_s)

    async def close(self) -> None:
        return None

    def mount(self, app: web.Application) -> None:
        app.router.add_post(f"{PREFIX}/ask", self._authed(self.ask))
        app.router.add_post(f"{PREFIX}/search", self._authed(self.search))
        app.router.add_get(PREFIX + "/documents/{id:.+}", self._authed(self.document))
        app.router.add_post(PREFIX + "/answers/{id}/vote", self._authed(self.vote))
        app.router.add_get(f"{PREFIX}/openapi.json", self.openapi)
        app.router.add_get(WELL_KNOWN + PREFIX, self._metadata)

    def _authed(self, handler: Handler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """Who calls, then the handler; its refusals and failures as problem documents."""
        async def run(request: web.Request) -> web.StreamResponse:
            with correlated() as cid:
                try:
                    caller = await self._bearers.caller_of(
                        request.headers.get("Authorization", ""), PLATFORM, self._resource)
                    return await handler(request, caller)
                except Unauthenticated as exc:
                    return problem(401, exc.sentence, headers={"WWW-Authenticate": challenge(
                        exc.error, exc.sentence, self._metadata_url)})
                except CallRefused as exc:
                    return problem(exc.status, exc.sentence, reference=exc.reference)
                except Exception:
                    log.exception("API %s %s failed", request.method, request.path)
                    return problem(500, messages.with_reference(messages.INTERNAL_ERROR, cid),
                                   reference=cid)
        return run

    async def _body(self, request: web.Request, model: type[M]) -> M:
        try:
            data = await request.json()
        except (ValueError, UnicodeDecodeError):
            raise CallRefused(400, "The request body is not JSON.") from None
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise CallRefused(422, invalid_input(exc)) from None

    async def ask(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        body = await self._body(request, AskRequest)
        mode = Mode(body.mode) if body.mode else None
        if "text/event-stream" in request.headers.get("Accept", ""):
            return await self._stream(request, caller, body.question, mode)
        answer, ref = await self._calls.ask(caller, body.question, mode)
        if answer.status is AnswerStatus.ERROR:
            raise CallRefused(502, answer.text, answer.question.correlation_id)
        return web.json_response(text=AskResult.of(answer, ref).model_dump_json())

    async def _stream(self, request: web.Request, caller: Caller, question: str,
                      mode: Mode | None) -> web.StreamResponse:
        """`preview` events with the answer so far, then one `answer` (or `error`)."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store"})
        await response.prepare(request)

        async def send(event: str, data: str) -> None:
            await response.write(f"event: {event}\ndata: {data}\n\n".encode())

        async def preview(text: str) -> None:
            await send("preview", json.dumps({"text": text}))

        try:
            answer, ref = await self._calls.ask(caller, question, mode, preview)
            await send("answer", AskResult.of(answer, ref).model_dump_json())
        except CallRefused as exc:
            await send("error", json.dumps({"status": exc.status, "detail": exc.sentence,
                                            "reference": exc.reference}))
        await response.write_eof()
        return response

    async def search(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        body = await self._body(request, SearchRequest)
        passages = await self._calls.search(caller, body.query, body.limit)
        result = SearchResult(passages=[PassageOut.of(p) for p in passages])
        return web.json_response(text=result.model_dump_json())

    async def document(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        found = await self._calls.document(caller, request.match_info["id"])
        return web.json_response(text=DocumentOut.of(found).model_dump_json())

    async def vote(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        body = await self._body(request, VoteRequest)
        said = await self._calls.vote(caller, request.match_info["id"], body.vote, body.comment)
        return web.json_response(text=VoteResult(message=said).model_dump_json())

    async def openapi(self, request: web.Request) -> web.Response:
        return web.json_response(openapi_document(self._base_url))
