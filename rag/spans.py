"""A span per pipeline stage, on OpenTelemetry's API: no-ops until tracing is turned on."""

from __future__ import annotations

import time

from opentelemetry import trace


def stage_span(stage: str, started: float, ended: float) -> None:
    """Record a finished stage (`time.perf_counter()` readings) as a span under the current
    one. Recorded when it ends, so that the pipeline's code stays as it is; the stage's own
    calls (an LLM request) appear beside it, under the answer's span."""
    tracer = trace.get_tracer("sift.pipeline")
    now_ns, now = time.time_ns(), time.perf_counter()
    span = tracer.start_span(f"sift.{stage}", start_time=now_ns - int((now - started) * 1e9))
    span.end(end_time=now_ns - int((now - ended) * 1e9))


def current_trace_id() -> str | None:
    """The trace id (32 hex digits) of the span in progress; None when nothing is traced."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None
