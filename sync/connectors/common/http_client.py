"""Requests to a knowledge platform: retries with backoff honouring Retry-After, clear errors."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from rag.errors import SyncError
from rag.http_retry import retry_after

log = logging.getLogger(__name__)
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
Sleep = Callable[[float], Awaitable[None]]
# Headers of a response read in full here: its body is kept decoded, so they no longer apply.
_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class TooLarge(SyncError):
    """A response body over the size limit: refused from its Content-Length, or stopped as
    it streamed in, so that it never sat whole in memory."""

    def __init__(self, url: str, limit: int) -> None:
        super().__init__(f"GET {url}: the body is over {limit} bytes", user_message=(
            f"over the {limit / 2**20:g} MB limit"))
        self.limit = limit
# A platform's own "slow down" that is not a 429 (GitHub's 403 with x-ratelimit-remaining: 0):
# the seconds to wait before trying again, or None when the response is no such thing.
Throttled = Callable[[httpx.Response], float | None]


def backoff(attempt: int, base_s: float, cap_s: float) -> float:
    """Exponential backoff with full jitter: spreads retries of many clients apart."""
    return random.uniform(0, min(cap_s, base_s * 2 ** attempt))


class Pacer:
    """A platform's documented request rate (Notion: 3/s): requests start this far apart.
    One per connector, shared by all its sessions, since the platform counts per token."""

    def __init__(self, per_second: float) -> None:
        self._spacing = 1.0 / per_second
        self._next_start = 0.0

    async def wait(self, sleep: Sleep) -> None:
        now = time.monotonic()
        wait = self._next_start - now
        self._next_start = max(now, self._next_start) + self._spacing
        if wait > 0:
            await sleep(wait)


class JsonClient:
    """One platform's HTTP API. The token only ever goes into headers, never into a message.

    `label` starts every error sentence ("Source 'wiki' (Confluence)"); `auth_hint` names the
    settings to check on 401/403. Statuses in a call's `accept` come back to the caller (a
    304, or a 403 on one page that the connector reports and skips)."""

    def __init__(self, client: httpx.AsyncClient, *, max_retries: int = 5,
                 backoff_s: float = 0.5, max_wait_s: float = 60.0,
                 sleep: Sleep = asyncio.sleep, label: str = "The knowledge platform",
                 auth_hint: str = "the source's `token`", pacer: Pacer | None = None,
                 throttled: Throttled | None = None) -> None:
        self._client = client
        self._max_retries = max_retries
        self._backoff_s = backoff_s
        self._max_wait_s = max_wait_s
        self._sleep = sleep
        self._label = label
        self._auth_hint = auth_hint
        self._pacer = pacer
        self._throttled = throttled

    async def get(self, url: str, params: Mapping[str, Any] | None = None, *,
                  headers: Mapping[str, str] | None = None,
                  accept: frozenset[int] = frozenset(),
                  max_bytes: int | None = None) -> httpx.Response:
        return await self.request("GET", url, params=params, headers=headers, accept=accept,
                                  max_bytes=max_bytes)

    async def request(self, method: str, url: str, *, params: Mapping[str, Any] | None = None,
                      json: Any = None, headers: Mapping[str, str] | None = None,
                      accept: frozenset[int] = frozenset(),
                      max_bytes: int | None = None) -> httpx.Response:
        """`max_bytes`: a body over it raises TooLarge (not retried) before it is read whole."""
        attempt = 0
        while True:
            if self._pacer is not None:
                await self._pacer.wait(self._sleep)
            try:
                # An empty params dict would make httpx drop the query of a next link.
                request = self._client.build_request(method, url, params=params or None,
                                                     json=json, headers=headers)
                response = await (self._client.send(request) if max_bytes is None
                                  else self._capped(request, max_bytes))
                outcome = self._judge(response, accept, attempt)
            except httpx.TransportError as exc:  # connection refused, reset, timeout
                outcome = self._delay(attempt, None), f"{type(exc).__name__}: {exc}"
            if isinstance(outcome, httpx.Response):
                return outcome
            wait, problem = outcome
            if attempt >= self._max_retries:
                shown = self._client.base_url.join(url)
                raise SyncError(f"{method} {shown} failed after {attempt + 1} attempts: "
                                f"{problem}", user_message=f"{self._label} at {shown} kept "
                                f"failing ({problem}) after {attempt + 1} attempts.")
            log.info("%s %s: %s; retrying in %.1fs", method, url, problem, wait)
            await self._sleep(wait)
            attempt += 1

    async def _capped(self, request: httpx.Request, max_bytes: int) -> httpx.Response:
        """The response, its body read as it streams in, up to `max_bytes` (decoded)."""
        response = await self._client.send(request, stream=True)
        try:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise TooLarge(str(response.url), max_bytes)
            parts, size = [], 0
            async for part in response.aiter_bytes():
                size += len(part)
                if size > max_bytes:  # no length given, or a wrong one, or a zip bomb
                    raise TooLarge(str(response.url), max_bytes)
                parts.append(part)
        finally:
            await response.aclose()
        headers = [(k, v) for k, v in response.headers.multi_items()
                   if k.lower() not in _BODY_HEADERS]
        return httpx.Response(response.status_code, headers=headers, content=b"".join(parts),
                              request=response.request)

    def _judge(self, response: httpx.Response, accept: frozenset[int],
               attempt: int) -> httpx.Response | tuple[float, str]:
        """The response, or (seconds to wait, what went wrong) when worth retrying."""
        status = response.status_code
        # Before `accept`: a caller accepting 403 (not readable) must still wait out a limit.
        hinted_wait = self._throttled(response) if self._throttled is not None else None
        if hinted_wait is not None:
            return min(hinted_wait, self._max_wait_s), f"HTTP {status} (rate limited)"
        if status in accept:
            return response
        if status in RETRY_STATUS:
            hinted = retry_after(response.headers.get("retry-after"))
            return self._delay(attempt, hinted), f"HTTP {status}"
        if status >= 400:
            hint = f" (check {self._auth_hint})" if status in (401, 403) else ""
            raise SyncError(f"{response.request.method} {response.url} returned HTTP {status}",
                            user_message=f"{self._label} answered HTTP {status} for "
                            f"{response.url}{hint}.")
        return response

    def _delay(self, attempt: int, hinted: float | None) -> float:
        if hinted is not None:
            return min(hinted, self._max_wait_s)
        return backoff(attempt, self._backoff_s, self._max_wait_s)


def decode_json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise SyncError(f"{response.request.method} {response.url} returned invalid JSON: {exc}",
                        user_message=f"The knowledge platform returned malformed JSON for "
                        f"{response.url}.") from exc


def json_field(response: httpx.Response, key: str, kind: type, label: str) -> Any:
    """`key` of the response's JSON object, which must be a `kind` (list or dict): else one
    sentence naming the platform (`label`) and the URL that answered without it."""
    body = decode_json(response)
    found = body.get(key) if isinstance(body, dict) else None
    if not isinstance(found, kind):
        shape = "list" if kind is list else "object"
        article = "an" if key[0] in "aeiou" else "a"
        raise SyncError(f"GET {response.url}: no '{key}' {shape}",
                        user_message=f"{label} answered {response.url} without {article} "
                        f"'{key}' {shape}.")
    return found
