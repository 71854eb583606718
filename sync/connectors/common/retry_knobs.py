"""The retry knobs a connector's table shares (max_retries, timeout_s, max_wait_s, backoff_s)."""

from __future__ import annotations

import httpx
from pydantic import Field

from sync.connectors.base import ConnectorSettings
from sync.connectors.common.http_client import JsonClient, Pacer, Throttled


class RetryKnobs(ConnectorSettings):
    """Declared once for every table whose connector calls an HTTP API through JsonClient:
    the same four keys in `[sources.<kind>]`, and the one client they configure. A kind whose
    platform wants another default (Drive's slow exports) redeclares that field only."""

    max_retries: int = Field(5, ge=0)  # 429, 5xx and timeouts are retried this often
    timeout_s: float = Field(30.0, gt=0)  # one request's limit
    max_wait_s: float = Field(60.0, gt=0)  # the longest wait a Retry-After may ask for
    backoff_s: float = Field(0.5, gt=0)  # the first backoff without a Retry-After

    def client(self, http: httpx.AsyncClient, *, label: str,
               auth_hint: str = "the source's `token`",
               throttled: Throttled | None = None, pacer: Pacer | None = None) -> JsonClient:
        return JsonClient(http, max_retries=self.max_retries, backoff_s=self.backoff_s,
                          max_wait_s=self.max_wait_s, label=label, auth_hint=auth_hint,
                          throttled=throttled, pacer=pacer)
