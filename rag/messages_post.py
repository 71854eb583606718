"""One non-streaming Messages API call over aiohttp, with the SDK's headers; failures classified."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from rag import llm_errors

if TYPE_CHECKING:
    import anthropic


class MessagesPost:
    """POSTs a request body to `/v1/messages` and returns the reply's JSON.

    Grading makes 20 such calls per answer. Through the SDK, about 70% of each call's CPU went
    to building an httpx request and handing it down to the aiohttp pool underneath
    (`bench.llm_calls` compares the two); here the headers are the SDK's own, computed once, and
    the body goes straight to aiohttp. A failure is raised as an LLMError by the same rules
    (`rag.llm_errors`) as the SDK's exceptions are, from the same status, headers and body.
    Only the SDK's public attributes are read (its default headers, base URL, pool limits).
    """

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self._client = client
        self._url = str(client.base_url).rstrip("/") + "/v1/messages"
        # The SDK's defaults: version, client and authentication headers (Omit markers dropped).
        self._headers = {k: v for k, v in client.default_headers.items() if isinstance(v, str)}
        self._session: aiohttp.ClientSession | None = None
        # A proxy from the environment (HTTPS_PROXY, NO_PROXY), as the SDK's client honours,
        # looked up once: aiohttp's `trust_env` would look it up, and read ~/.netrc, in a
        # thread on every call.
        self._proxy: URL | None = None
        self._proxy_auth: aiohttp.BasicAuth | None = None
        with contextlib.suppress(LookupError):  # none set for this host
            self._proxy, self._proxy_auth = get_env_proxy_for_url(URL(self._url))

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            import anthropic

            limits = anthropic.DEFAULT_CONNECTION_LIMITS  # the SDK's pool size and keep-alive
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=limits.max_connections or 0,
                                               keepalive_timeout=limits.keepalive_expiry))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def __call__(self, body: dict[str, Any], timeout_s: float) -> Any:
        data = json.dumps(body).encode()
        try:
            async with self._open().post(self._url, data=data, headers=self._headers,
                                         timeout=aiohttp.ClientTimeout(total=timeout_s),
                                         proxy=self._proxy, proxy_auth=self._proxy_auth,
                                         ) as response:
                content = await response.read()
                status, headers = response.status, response.headers
        except TimeoutError as exc:
            raise llm_errors.timed_out(exc) from exc
        except aiohttp.ClientError as exc:
            raise llm_errors.unreachable(f"{type(exc).__name__}: {exc}") from exc
        if status >= 400:
            raise _failure(status, headers, content)
        try:
            return json.loads(content)
        except ValueError as exc:
            raise llm_errors.malformed(f"the reply was not JSON: {content[:80]!r}") from exc


def _failure(status: int, headers: Mapping[str, str], content: bytes) -> Exception:
    try:
        kind, code, message = llm_errors.error_fields(json.loads(content))
    except ValueError:  # an error page from a proxy in the way
        kind, code, message = "", "", content[:80].decode(errors="replace")
    return llm_errors.from_failure(llm_errors.Failure(status, kind, message, code,
                                                      llm_errors.hinted_wait(headers)))
