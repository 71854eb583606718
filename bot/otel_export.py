"""The OpenTelemetry SDK's side of tracing: provider, OTLP/HTTP exporter, aiohttp spans."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from rag import spans

log = logging.getLogger(__name__)
# Where HTTP instrumentation puts a URL or its query (old and new semantic conventions).
URL_KEYS = ("http.url", "url.full", "http.target")
QUERY_KEYS = ("url.query",)


class _NoQueries(SpanProcessor):
    """Query strings leave every span before it is exported: an OIDC callback's code, a
    platform's validation token or a connector's API key never reach the trace backend."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        attributes = span.attributes or {}
        for key in URL_KEYS:
            value = attributes.get(key)
            if isinstance(value, str) and "?" in value:
                span.set_attribute(key, _without_query(value))
        for key in QUERY_KEYS:
            if key in attributes:
                span.set_attribute(key, "")


def _without_query(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class Tracing:
    """The tracer provider, the OTLP/HTTP exporter and the aiohttp server and client
    instrumentation. The exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself
    (endpoint, headers, timeout); OTEL_SERVICE_NAME names the service (default "sift")."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor
        from opentelemetry.instrumentation.aiohttp_server import AioHttpServerInstrumentor

        name = environ.get("OTEL_SERVICE_NAME") or "sift"
        self.provider = TracerProvider(resource=Resource.create({"service.name": name}))
        self.provider.add_span_processor(_NoQueries())
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(self.provider)  # rag's stage spans use the global one
        # The server side adds its middleware to every web.Application made from now on.
        self._server = AioHttpServerInstrumentor()
        self._server.instrument(tracer_provider=self.provider)
        self._client = AioHttpClientInstrumentor()
        self._client.instrument(tracer_provider=self.provider)
        spans.turn_on(True)
        log.info("tracing: OpenTelemetry spans exported over OTLP/HTTP as %r", name)

    def close(self) -> None:
        """Send what is buffered, and leave aiohttp and the global provider as they were."""
        self._server.uninstrument()
        self._client.uninstrument()
        spans.turn_on(False)
        self.provider.shutdown()
        _forget_provider()


def _forget_provider() -> None:
    """Back to no global provider, as OpenTelemetry's own test helpers do: a process that
    serves again without tracing (the test suite) must not keep making recording spans,
    whose trace ids would become its correlation ids."""
    from opentelemetry.util._once import Once

    trace._TRACER_PROVIDER = None
    trace._TRACER_PROVIDER_SET_ONCE = Once()
