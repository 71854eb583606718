"""Routes of the web chat: the page, a question streamed as server-sent events, a vote."""

from __future__ import annotations

import base64
import hmac
import html
import json
import logging
import re
import secrets
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.chat.files import Attached, TooLarge
from bot.chat.flow import ChatFlow
from bot.chat.message import VIA_BUTTON, ChatMessage, Kind, Vote
from bot.chat.tasks import Background, Busy
from bot.proxy import client_of
from bot.webchat.surface import WebSurface
from rag import messages
from rag.i18n import from_accept_language, speaking

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
USER_COOKIE = "sift_chat"
CSRF_COOKIE = "sift_chat_csrf"
_TOKEN = re.compile(r"[0-9a-f]{64}")
PLATFORM = "web"  # what the web chat's questions are recorded under
CHANNEL = "web"  # every web conversation's channel: its messages are answers' refs
_SECURITY = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
             "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
             "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SIGN_IN_FIRST = "Sign in first: open this site's start page and sign in, then ask again."


def in_browser_language(handler: Handler) -> Handler:
    """`handler` with Sift's sentences in the browser's language (its Accept-Language)."""
    async def run(request: web.Request) -> web.StreamResponse:
        with speaking(from_accept_language(request.headers.get("Accept-Language", ""))):
            return await handler(request)
    return run


@dataclass(frozen=True)
class Reader:
    """A signed-in person; `email` when their sign-in named one (their documents follow it),
    `sign_in` naming that sign-in (the conversation is theirs alone, and ends with it)."""

    email: str = ""
    sign_in: str = ""


def visitor_of(request: web.Request) -> str:
    """The browser's chat id from its cookie; "" when it has none (or a malformed one)."""
    user = request.cookies.get(USER_COOKIE, "")
    return user if user.startswith("web-") and len(user) == 36 else ""


def posted_files(raw: Any) -> tuple[Attached, ...] | None:
    """The files the page sent with the question ({name, type, data in base64}); None for a
    list that is not one."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(f, dict) for f in raw):
        return None
    found = []
    for item in raw:
        name, media_type, data = item.get("name"), item.get("type"), item.get("data")
        if not all(isinstance(v, str) for v in (name, media_type, data)):
            return None
        found.append(Attached(name[:200] or "file", media_type, len(data) * 3 // 4,
                              partial(_decoded, data)))
    return tuple(found)


async def _decoded(data: str, limit: int) -> bytes:
    """What the page read from the file; the request's own size bounds it already."""
    decoded = base64.b64decode(data, validate=True)
    if len(decoded) > limit:
        raise TooLarge(f"{len(decoded)} bytes")
    return decoded


def conversation_key(visitor: str, reader: Reader) -> str:
    """One conversation per browser and sign-in: history never passes from one person to the
    next on a shared browser, whose chat cookie outlives every sign-in."""
    return f"web:{visitor}:{reader.sign_in}" if reader.sign_in else f"web:{visitor}"


@dataclass(frozen=True)
class Gate:
    """Who may use the chat when it is reachable from other machines: `reader` finds the
    request's signed-in person (None: nobody), `login_url` is where the page sends them."""

    reader: Callable[[web.Request], Awaitable[Reader | None]]
    login_url: str


class WebChat:
    """`mount` adds GET /, POST /chat/ask and POST /chat/vote to the `sift serve` app; with a
    `gate`, only signed-in people get the page or an answer."""

    def __init__(self, flow: ChatFlow, *, max_chars: int = 4000, gate: Gate | None = None,
                 max_in_flight: int = 0, placeholder: str = "Ask a question") -> None:
        self._flow = flow
        self._placeholder = html.escape(placeholder, quote=True)
        self._max_chars = max_chars
        self._gate = gate
        # Answers run as tasks of their own, bounded like every surface's (SIFT_CHAT__
        # MAX_IN_FLIGHT) and drained at shutdown; the request streams what they say.
        self.background = Background("web chat", limit=max_in_flight)

    async def start(self) -> None:
        return None  # browsers call in; there is nothing to connect

    async def drain(self, timeout_s: float = 30.0) -> None:
        await self.background.drain(timeout_s)

    async def close(self) -> None:
        return None

    def mount(self, app: web.Application) -> None:
        app.router.add_get("/", self.page)
        app.router.add_post("/chat/ask", in_browser_language(self.ask))
        app.router.add_post("/chat/vote", in_browser_language(self.vote))
        app.router.add_static("/chat/static/", STATIC, append_version=True)


    async def _reader(self, request: web.Request) -> Reader | None:
        """Who asks: Reader() when the chat is open to all (loopback), None when refused."""
        return Reader() if self._gate is None else await self._gate.reader(request)

    async def page(self, request: web.Request) -> web.Response:
        if await self._reader(request) is None:
            raise web.HTTPSeeOther(self._gate.login_url if self._gate else "/")
        user = visitor_of(request) or f"web-{secrets.token_hex(16)}"
        # Double submit: requests must echo the token this browser's cookie holds, which
        # another site can neither read nor set. No server-side secret, so any replica can
        # check a page that another replica served.
        # One token per browser, kept across page loads: two open tabs both keep working.
        kept = request.cookies.get(CSRF_COOKIE, "")
        token = kept if _TOKEN.fullmatch(kept) else secrets.token_hex(32)
        body = (STATIC / "chat.html").read_text(encoding="utf-8") \
            .replace("{{csrf}}", token).replace("{{placeholder}}", self._placeholder)
        response = web.Response(text=body, content_type="text/html", headers=_SECURITY)
        for name, value in ((USER_COOKIE, user), (CSRF_COOKIE, token)):
            response.set_cookie(name, value, httponly=True, samesite="Strict",
                                secure=client_of(request).secure, max_age=30 * 24 * 3600)
        return response

    async def _checked(self, request: web.Request) -> tuple[str, Reader, dict[str, Any]]:
        """The visitor, who is signed in and the JSON body; 401 without a sign-in the gate
        accepts, 403 for a request the page did not make."""
        reader = await self._reader(request)
        if reader is None:
            log.info("web chat: refused a %s without a sign-in", request.path)
            raise web.HTTPUnauthorized(text=SIGN_IN_FIRST)
        user = visitor_of(request)
        try:
            data = await request.json()
        except (ValueError, UnicodeDecodeError):
            raise web.HTTPBadRequest(text="The request body is not JSON.") from None
        token = data.get("csrf") if isinstance(data, dict) else None
        expected = request.cookies.get(CSRF_COOKIE, "")
        if not user or not expected or not isinstance(token, str) or not hmac.compare_digest(
                token.encode(), expected.encode()):  # bytes: a non-ASCII str would raise
            raise web.HTTPForbidden(text="This request did not come from the chat page; "
                                    "reload the page and try again.")
        return user, reader, data

    async def ask(self, request: web.Request) -> web.StreamResponse:
        user, reader, data = await self._checked(request)
        text, files = data.get("question"), posted_files(data.get("files"))
        if not isinstance(text, str) or files is None:
            raise web.HTTPBadRequest(text="The request has no question.")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store", **_SECURITY})
        await response.prepare(request)

        async def send(event: str, payload: dict[str, Any]) -> None:
            await response.write(f"event: {event}\ndata: {json.dumps(payload)}\n\n".encode())

        message = ChatMessage(PLATFORM, Kind.DIRECT, f"web:{uuid.uuid4().hex}", "",
                              CHANNEL, "", user, text.strip()[: self._max_chars + 1],
                              conversation=conversation_key(user, reader), email=reader.email,
                              files=files)
        surface = WebSurface(send)
        try:
            await self.background.spawn(self._flow.on_message(message, surface))
        except Busy:
            await surface.notice(messages.BUSY)
        await send("done", {})
        await response.write_eof()
        return response

    async def vote(self, request: web.Request) -> web.Response:
        user, _, data = await self._checked(request)
        ref, value = data.get("ref"), data.get("vote")
        if not isinstance(ref, str) or value not in (1, -1):
            raise web.HTTPBadRequest(text="A vote names an answer and is 1 or -1.")
        said: list[str] = []

        async def send(event: str, payload: dict[str, Any]) -> None:
            said.append(str(payload.get("html", "")))

        await self._flow.on_vote(Vote(PLATFORM, CHANNEL, ref, user, value, VIA_BUTTON),
                                 WebSurface(send))
        return web.json_response({"html": " ".join(said) or messages.FEEDBACK_THANKS})
