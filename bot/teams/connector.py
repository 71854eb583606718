"""Outbound calls to the Bot Connector service, retried on 429/412/502/504 with backoff.

The Agents SDK retries nothing. Teams throttles per bot and thread (7 messages a second,
60 in 30 s) and asks bots to back off on 429 and to retry 412, 502 and 504 as well.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from aiohttp import (
    ClientHandlerType,
    ClientMiddlewareType,
    ClientRequest,
    ClientResponse,
    ClientSession,
)
from microsoft_agents.hosting.core import (
    RestChannelServiceClientFactory,
    TeamsConnectorClient,
    TurnContext,
)
from microsoft_agents.hosting.core.authorization import ClaimsIdentity, Connections
from microsoft_agents.hosting.core.connector import ConnectorClientBase

from rag.http_retry import retry_after as parse_retry_after

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({412, 429, 502, 504})


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4
    base_s: float = 0.5
    max_wait_s: float = 30.0

    def delay(self, attempt: int, retry_after: str | None, jitter: float,
              now: datetime | None = None) -> float:
        """Seconds before retry `attempt` (0-based): the server's Retry-After if it gave one,
        else exponential backoff with up to 25% jitter; never more than `max_wait_s`."""
        told = parse_retry_after(retry_after, now)
        wait = told if told is not None else self.base_s * 2 ** attempt * (1 + jitter / 4)
        return min(wait, self.max_wait_s)


Sleep = Callable[[float], Awaitable[None]]


def retry_middleware(policy: RetryPolicy, sleep: Sleep = asyncio.sleep,
                     jitter: Callable[[], float] = random.random) -> ClientMiddlewareType:
    async def retrying(request: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        attempt = 0
        while True:
            response = await handler(request)
            if response.status not in RETRY_STATUSES or attempt >= policy.retries:
                return response
            wait = policy.delay(attempt, response.headers.get("Retry-After"), jitter())
            log.warning("connector answered %s to %s %s; retry %d of %d in %.1f s",
                        response.status, request.method, request.url.path, attempt + 1,
                        policy.retries, wait)
            response.release()
            await sleep(wait)
            attempt += 1

    return retrying


class RetryingClientFactory(RestChannelServiceClientFactory):
    """The SDK's factory, with the retry middleware on every Teams connector session."""

    def __init__(self, connections: Connections, policy: RetryPolicy) -> None:
        super().__init__(connections)
        self._policy = policy

    async def create_connector_client(
        self, context: TurnContext | None, claims_identity: ClaimsIdentity, service_url: str,
        audience: str, scopes: list[str] | None = None, use_anonymous: bool = False,
    ) -> ConnectorClientBase:
        client = await super().create_connector_client(
            context, claims_identity, service_url, audience, scopes, use_anonymous)
        if not isinstance(client, TeamsConnectorClient):
            return client
        # The SDK built the session with the token header; keep its headers, add the retries.
        headers = dict(client.client.headers)
        await client.close()
        base = service_url if service_url.endswith("/") else service_url + "/"
        session = ClientSession(base_url=base, headers=headers,
                                middlewares=(retry_middleware(self._policy),))
        return TeamsConnectorClient(endpoint=base, token="", session=session)
