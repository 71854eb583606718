"""The one retry loop every LLM adapter runs its calls through, and where each outcome is known."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from rag.errors import LLMError
from rag.ports import LLMRequest, LLMResponse
from rag.types import Usage

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 8.0
MAX_HINTED_S = 60.0


@dataclass(frozen=True)
class CallOutcome:
    """One LLM call as a whole (all its attempts): the single place a call's provider, model,
    purpose, tokens, time and failure are all known, for logs and metrics to read."""

    provider: str
    model: str
    purpose: str
    seconds: float
    attempts: int
    usage: Usage = field(default_factory=Usage)
    error: LLMError | None = None


OutcomeSink = Callable[[CallOutcome], None]


def _ignore(outcome: CallOutcome) -> None:
    return None


class RetryLoop:
    """Retries what waiting can fix, within one deadline over every attempt. `classify` turns
    the adapter's SDK exceptions into LLMErrors; `committed` says output has already gone out
    (a streamed answer), after which a failure is not retried."""

    def __init__(self, provider: str, *, max_retries: int, timeout_s: float,
                 classify: Callable[[Exception], LLMError],
                 on_outcome: OutcomeSink | None = None) -> None:
        self.provider = provider
        self._max_retries = max_retries
        self._timeout_s = timeout_s
        self._classify = classify
        self.on_outcome: OutcomeSink = on_outcome or _ignore

    async def run(self, request: LLMRequest, once: Callable[[float], Awaitable[LLMResponse]],
                  committed: Callable[[], bool] = lambda: False) -> LLMResponse:
        started = time.monotonic()
        deadline = started + (request.timeout_s or self._timeout_s)
        attempt = 0
        while True:
            try:
                response = await once(max(deadline - time.monotonic(), 0.1))
            except Exception as exc:  # each SDK's hierarchy is mapped in one place: classify
                error = self._classify(exc)
                wait = self._backoff(error, attempt)
                if not error.retryable or committed() or attempt >= self._max_retries or \
                        time.monotonic() + wait >= deadline:
                    log.warning("%s call to %s (%s) failed after %d attempt(s): %s",
                                request.purpose or "LLM", request.model, self.provider,
                                attempt + 1, error)
                    self._tell(request, started, attempt + 1, None, error)
                    raise error from exc
                attempt += 1
                log.info("%s call: %s; retry %d in %.2fs", request.purpose or "LLM",
                         error.kind, attempt, wait)
                await asyncio.sleep(wait)
            else:
                self._tell(request, started, attempt + 1, response, None)
                return response

    def _tell(self, request: LLMRequest, started: float, attempts: int,
              response: LLMResponse | None, error: LLMError | None) -> None:
        usage = response.usage if response is not None else Usage()
        self.on_outcome(CallOutcome(self.provider, request.model, request.purpose,
                                    time.monotonic() - started, attempts, usage, error))

    @staticmethod
    def _backoff(error: LLMError, attempt: int) -> float:
        if error.retry_after_s is not None:
            return min(error.retry_after_s, MAX_HINTED_S)
        return min(0.5 * 2**attempt, MAX_BACKOFF_S) * (1 - 0.25 * random.random())
