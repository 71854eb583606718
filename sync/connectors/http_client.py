"""GET JSON from a knowledge platform: bearer auth, retries with backoff honouring Retry-After."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from rag.errors import SyncError
from rag.http_retry import retry_after

log = logging.getLogger(__name__)
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
Sleep = Callable[[float], Awaitable[None]]


def backoff(attempt: int, base_s: float, cap_s: float) -> float:
    """Exponential backoff with full jitter: spreads retries of many clients apart."""
    return random.uniform(0, min(cap_s, base_s * 2 ** attempt))


class JsonClient:
    """One platform's HTTP API. The token only ever goes into the Authorization header."""

    def __init__(self, client: httpx.AsyncClient, *, max_retries: int = 5,
                 backoff_s: float = 0.5, max_wait_s: float = 60.0,
                 sleep: Sleep = asyncio.sleep) -> None:
        self._client = client
        self._max_retries = max_retries
        self._backoff_s = backoff_s
        self._max_wait_s = max_wait_s
        self._sleep = sleep

    async def get(self, url: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        attempt = 0
        while True:
            outcome = await self._attempt(url, params, attempt)
            if isinstance(outcome, httpx.Response):
                return outcome
            wait, problem = outcome
            if attempt >= self._max_retries:
                shown = self._client.base_url.join(url)
                raise SyncError(f"GET {shown} failed after {attempt + 1} attempts: {problem}",
                                user_message=f"The knowledge platform at {shown} kept failing "
                                f"({problem}) after {attempt + 1} attempts.")
            log.info("GET %s: %s; retrying in %.1fs", url, problem, wait)
            await self._sleep(wait)
            attempt += 1

    async def _attempt(self, url: str, params: Mapping[str, Any] | None,
                       attempt: int) -> httpx.Response | tuple[float, str]:
        """The response, or (seconds to wait, what went wrong) when worth retrying."""
        try:
            response = await self._client.get(url, params=params)
        except httpx.TransportError as exc:  # connection refused, reset, timeout
            return self._delay(attempt, None), f"{type(exc).__name__}: {exc}"
        if response.status_code in RETRY_STATUS:
            hinted = retry_after(response.headers.get("retry-after"))
            return self._delay(attempt, hinted), f"HTTP {response.status_code}"
        if response.status_code >= 400:
            hint = " (check the source's token)" if response.status_code in (401, 403) else ""
            raise SyncError(f"GET {response.url} returned HTTP {response.status_code}",
                            user_message=f"The knowledge platform answered HTTP "
                            f"{response.status_code} for {response.url}{hint}.")
        return response

    def _delay(self, attempt: int, hinted: float | None) -> float:
        if hinted is not None:
            return min(hinted, self._max_wait_s)
        return backoff(attempt, self._backoff_s, self._max_wait_s)


def decode_json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise SyncError(f"GET {response.url} returned invalid JSON: {exc}",
                        user_message=f"The knowledge platform returned malformed JSON for "
                        f"{response.url}.") from exc
