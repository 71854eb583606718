"""OpenTelemetry through `sift serve`: off by default; with OTEL_EXPORTER_OTLP_ENDPOINT, a
replayed Slack question arrives at a local OTLP/HTTP collector as spans (the web request,
each stage, the LLM's HTTP calls), without the question's text, its trace id the answer's
correlation id. The tracer provider is process-wide, so one test here turns tracing on."""

from __future__ import annotations

import pytest

from storage.models import Interaction
from tests.fakes.otlp_server import PROTOBUF, FakeCollector
from tests.scenarios.slack_stack import Serve

pytestmark = pytest.mark.weaviate

QUESTION = "How do I rotate the staging database credentials?"
STAGES = {"sift.understand", "sift.retrieve", "sift.grade", "sift.select", "sift.generate"}


async def test_no_spans_leave_without_an_endpoint(make_served: Serve,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeCollector() as collector:
        assert isinstance(collector, FakeCollector)
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
        s = await make_served()
        await s.driver.mention(f"<@U0BOT> {QUESTION}", ts="1700000000.000100")
        await s.answer_in("C0KNOWLEDGE")
        [row] = await s.rows(Interaction, 1)
        await s.sift.stop()
        assert collector.spans == []
        assert len(row.correlation_id) == 8  # the short reference, no trace to name


async def test_a_question_is_traced_stage_by_stage(make_served: Serve,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeCollector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "sift-test")
        s = await make_served()
        await s.driver.mention(f"<@U0BOT> {QUESTION}", ts="1700000000.000100")
        await s.answer_in("C0KNOWLEDGE")
        [row] = await s.rows(Interaction, 1)
        await s.sift.stop()  # the exporter sends what it holds on shutdown
    assert collector.content_types and set(collector.content_types) == {PROTOBUF}
    by_name: dict[str, list[object]] = {}
    for span in collector.spans:
        by_name.setdefault(span.name, []).append(span)
    [answer] = by_name["sift.answer"]
    assert set(by_name) >= STAGES, sorted(by_name)
    # The stages sit under the answer's span, in the answer's trace, whose id is the
    # correlation id the log and the database carry.
    trace_id = answer.trace_id  # type: ignore[attr-defined]
    assert row.correlation_id == trace_id
    for stage in STAGES:
        [span] = by_name[stage]
        assert span.parent_id == answer.span_id  # type: ignore[attr-defined]
        assert span.trace_id == trace_id  # type: ignore[attr-defined]
    assert answer.attributes["sift.outcome"] == "answered"  # type: ignore[attr-defined]
    # aiohttp's own spans: the Slack event Sift served, and the model calls it made.
    server = [s for s in collector.spans if s.kind == 2]  # SPAN_KIND_SERVER
    assert any(s.attributes.get("http.route") == "/slack/events" for s in server)
    client = [s for s in collector.spans if s.kind == 3 and s.trace_id == trace_id]
    assert any("/v1/messages" in str(s.attributes.get("http.url", s.attributes.get(
        "url.full", ""))) for s in client), [s.attributes for s in client]
    assert {s.service for s in collector.spans} == {"sift-test"}
    # No span carries the question (SIFT_TRACING__QUESTION_TEXT is off).
    for span in collector.spans:
        assert not any("staging database" in str(v) for v in span.attributes.values()), span
