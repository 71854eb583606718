"""A circuit breaker over the LLM port: a dead key or spent budget stops the calls for a while."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from rag.errors import LLMError
from rag.ports import LLM, LLMRequest, LLMResponse, TextSink

log = logging.getLogger(__name__)

# Errors that no retry and no other question can fix until someone changes the key or budget.
TRIPPING_KINDS = frozenset({"auth", "spend_limit"})


class CircuitBreaker:
    """Wraps the LLM. After an authentication or spend-limit error the circuit opens: calls fail
    at once (no HTTP) for `cooldown_s`; then one call is let through as a probe, and its result
    closes the circuit or opens it again."""

    def __init__(self, inner: LLM, cooldown_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._inner = inner
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._open_until: float | None = None
        self._probing = False

    def allows_calls(self) -> bool:
        """False while open (or while the one probe is out): questions should skip the LLM."""
        if self._open_until is None:
            return True
        return not self._probing and self._clock() >= self._open_until

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return await self._guarded(request, lambda accepted: self._inner.complete(request))

    async def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        def call(accepted: Callable[[], None]) -> Awaitable[LLMResponse]:
            async def read(delta: str) -> None:
                accepted()  # text streams only under a key the API accepted
                await on_text(delta)
            return self._inner.stream(request, read)
        return await self._guarded(request, call)

    async def _guarded(self, request: LLMRequest,
                       call: Callable[[Callable[[], None]], Awaitable[LLMResponse]]
                       ) -> LLMResponse:
        probe = self._open_until is not None
        if probe and not self.allows_calls():
            raise LLMError("the circuit is open after an authentication or spend-limit error",
                           kind="circuit_open", retryable=False)
        self._probing = probe

        def accepted() -> None:
            # A streamed probe proves the key with its first text, not at its end: the calls
            # waiting beside it (a question's grades) need not fail meanwhile.
            if probe and self._open_until is not None:
                self._probing = False
                self._close()

        try:
            response = await call(accepted)
        except LLMError as exc:
            if exc.kind in TRIPPING_KINDS:
                self._trip(exc)
            elif probe:
                accepted()  # the key was accepted; this failure is of another kind
            raise
        finally:
            if probe:
                self._probing = False
        accepted()
        return response

    def _trip(self, exc: LLMError) -> None:
        self._open_until = self._clock() + self._cooldown_s
        log.error("LLM circuit open for %.0fs after a '%s' error; questions are answered from "
                  "excerpts until a probe call succeeds: %s", self._cooldown_s, exc.kind, exc)

    def _close(self) -> None:
        self._open_until = None
        log.warning("LLM circuit closed: the probe call was accepted")
