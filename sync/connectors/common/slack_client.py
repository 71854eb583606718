"""The one Slack Web API client factory (chat, permissions, channel sync): retries, NO_PROXY."""

from __future__ import annotations

import urllib.request
from urllib.parse import urlsplit

from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.interval_calculator import RetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient

DEFAULT_API_URL = "https://slack.com/api/"


def web_client(token: str, api_url: str = "", *, retries: int = 2,
               interval: RetryIntervalCalculator | None = None) -> AsyncWebClient:
    """The one Web API client; bolt copies its base URL and retry handlers to every request."""
    base_url = (api_url or DEFAULT_API_URL).rstrip("/") + "/"
    client = AsyncWebClient(token=token, base_url=base_url)
    # slack_sdk reads HTTPS_PROXY by itself but not NO_PROXY; the other clients honour both.
    host = urlsplit(base_url).hostname or ""
    if client.proxy and urllib.request.proxy_bypass(host):
        client.proxy = None
    extra: list[AsyncRetryHandler] = [
        AsyncRateLimitErrorRetryHandler(max_retry_count=retries),
        AsyncServerErrorRetryHandler(max_retry_count=retries),
    ]
    if interval is not None:
        for handler in extra:
            handler.interval_calculator = interval
    client.retry_handlers.extend(extra)
    return client
