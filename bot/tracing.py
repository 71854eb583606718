"""OpenTelemetry traces of `sift serve`: off unless OTEL_EXPORTER_OTLP_*ENDPOINT is set."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.otel_export import Tracing

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def start_tracing(environ: Mapping[str, str]) -> Tracing | None:
    """Tracing when an OTLP endpoint is configured and OTEL_SDK_DISABLED is not true. The SDK
    is imported only then (rag/spans.py: its API alone takes most of a second)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if not any(environ.get(name) for name in ENDPOINTS):
        return None
    from bot.otel_export import Tracing

    return Tracing(environ)
