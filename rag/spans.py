"""A span per pipeline stage, on OpenTelemetry's API, and nothing at all when nothing traces.

OpenTelemetry's API takes most of a second to import (it scans installed packages' entry
points), so rag/ never imports it itself: `sift serve` turns these helpers on when it exports
spans (bot/otel_export.py), and off again on stop. Other libraries' spans (the Agents SDK
makes some) never become Sift's correlation ids while Sift is not tracing."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

_tracing = {"on": False}  # the one switch, as process-wide as OpenTelemetry's own provider


def turn_on(on: bool) -> None:
    _tracing["on"] = on


def _api() -> ModuleType | None:
    return sys.modules.get("opentelemetry.trace") if _tracing["on"] else None


def stage_span(stage: str, started: float, ended: float) -> None:
    """Record a finished stage (`time.perf_counter()` readings) as a span under the current
    one. Recorded when it ends, so that the pipeline's code stays as it is; the stage's own
    calls (an LLM request) appear beside it, under the answer's span."""
    trace = _api()
    if trace is None:
        return
    tracer = trace.get_tracer("sift.pipeline")
    now_ns, now = time.time_ns(), time.perf_counter()
    span = tracer.start_span(f"sift.{stage}", start_time=now_ns - int((now - started) * 1e9))
    span.end(end_time=now_ns - int((now - ended) * 1e9))


@contextlib.contextmanager
def span(name: str) -> Iterator[Any]:
    """A span around the block, current inside it; yields it (None when nothing traces)."""
    trace = _api()
    if trace is None:
        yield None
        return
    with trace.get_tracer("sift").start_as_current_span(name) as opened:
        yield opened


def current_trace_id() -> str | None:
    """The trace id (32 hex digits) of the span in progress; None when nothing is traced."""
    trace = _api()
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None
