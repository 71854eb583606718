"""`/sync/hooks/<source>`: a platform's change notification, verified, then synced."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from bot.metrics.registry import Metrics
from bot.proxy import client_of
from rag.logcontext import new_correlation_id
from rag.messages import with_reference
from sync.push import MalformedBody, PushReceiver, PushRejected, PushReply, PushRequest
from sync.push_queue import PushSyncs

log = logging.getLogger(__name__)
Claim = Callable[[str, float], bool]  # True for the first claim of a key within its time
ROUTE = "/sync/hooks/{source}"
# A handshake echoes the caller's text: a browser must never read it as anything but text.
NOSNIFF = {"X-Content-Type-Options": "nosniff"}


@dataclass(frozen=True)
class PushEndpoint:
    """One configured source's endpoint: its kind, and its receiver (None: takes no pushes)."""

    kind: str
    receiver: PushReceiver | None


class PushRoutes:
    """Thin: parse the call, ask the source's receiver, queue what it names, answer it.
    The receiver's verdict is the only gate; a refused call changes nothing at all."""

    def __init__(self, endpoints: Mapping[str, PushEndpoint], syncs: PushSyncs,
                 claim: Claim | None = None, metrics: Metrics | None = None) -> None:
        self.endpoints = endpoints
        self.syncs = syncs
        self._claim = claim  # every replica's shared dedupe: a replay refused on any of them
        self.metrics = metrics

    def _count(self, source: str, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.push_hooks.labels(source, outcome).inc()

    def mount(self, app: web.Application) -> None:
        app.router.add_post(ROUTE, self.handle)
        app.router.add_get(ROUTE, self.handle)  # validation handshakes some platforms send

    async def handle(self, request: web.Request) -> web.Response:
        name = request.match_info["source"]
        endpoint = self.endpoints.get(name)
        if endpoint is None:
            return _text(404, f"There is no source named '{name}' in this Sift.")
        if endpoint.receiver is None:
            return _text(404, f"Source '{name}' is {endpoint.kind}, which sends no push "
                         "notifications; its scheduled syncs keep it current.")
        push = PushRequest(request.method, {k.lower(): v for k, v in request.headers.items()},
                           dict(request.query), await request.read())
        reference = new_correlation_id()
        try:
            reply = endpoint.receiver.receive(push)
        except MalformedBody as exc:
            log.warning("push to %s refused [%s] from %s: %s", name, reference,
                        client_of(request).address, exc)
            self._count(name, "refused")
            return _text(400, with_reference("The body is not JSON.", reference))
        except PushRejected as exc:  # the reason (never the secret) for the operator only
            log.warning("push to %s refused [%s] from %s: %s", name, reference,
                        client_of(request).address, exc)
            self._count(name, "refused")
            return _text(401, with_reference("This notification could not be verified.",
                                             reference))
        except Exception:
            log.exception("push to %s failed [%s]", name, reference)
            self._count(name, "failed")
            return _text(500, with_reference("This notification could not be handled.",
                                             reference))
        if reply.replay_key and not await self._first(name, reply):
            log.warning("push to %s refused [%s] from %s: a replay of a notification already "
                        "received", name, reference, client_of(request).address)
            self._count(name, "refused")
            return _text(409, with_reference("This notification was already received.",
                                             reference))
        self._count(name, "accepted" if reply.status < 300 else "refused")
        if reply.status < 300 and (reply.doc_ids or reply.resync):
            self.syncs.submit(name, reply.doc_ids, reply.resync)
            log.info("push to %s: queued %d named document(s)%s", name, len(reply.doc_ids),
                     " and an incremental sync" if reply.resync else "")
        return web.Response(status=reply.status, text=reply.body,
                            content_type=reply.content_type, headers=NOSNIFF)


    async def _first(self, name: str, reply: PushReply) -> bool:
        if self._claim is None:
            return True
        digest = hashlib.sha256(reply.replay_key.encode("utf-8", "surrogateescape")).hexdigest()
        return await asyncio.to_thread(self._claim, f"push|{name}|{digest}", reply.replay_ttl_s)


def _text(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message, content_type="text/plain",
                        headers=NOSNIFF)
