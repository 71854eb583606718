"""A fake OpenTelemetry collector: the OTLP/HTTP traces endpoint, protobuf in and out.

As the OTLP specification's OTLP/HTTP section has it: POST /v1/traces with a binary
`ExportTraceServiceRequest` (Content-Type application/x-protobuf), answered 200 with an
`ExportTraceServiceResponse` in the same encoding."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.fakes.http import LocalServer

PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, object]
    service: str


class FakeCollector(LocalServer):
    def __init__(self) -> None:
        super().__init__()
        self.spans: list[ReceivedSpan] = []
        self.content_types: list[str] = []
        self.app.router.add_post("/v1/traces", self.traces)

    async def traces(self, request: web.Request) -> web.Response:
        self.content_types.append(request.headers.get("Content-Type", ""))
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.read())
        for resource_spans in export.resource_spans:
            service = next((a.value.string_value for a in resource_spans.resource.attributes
                            if a.key == "service.name"), "")
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(ReceivedSpan(
                        span.name, span.trace_id.hex(), span.span_id.hex(),
                        span.parent_span_id.hex(), span.kind,
                        {a.key: _value(a.value) for a in span.attributes}, service))
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(),
                            content_type=PROTOBUF)


def _value(any_value: object) -> object:
    which = any_value.WhichOneof("value")  # type: ignore[attr-defined]
    return getattr(any_value, which) if which else None
