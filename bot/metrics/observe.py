"""Where metrics are observed: wrappers at the seams answers, LLM calls, votes and syncs pass."""

from __future__ import annotations

import time

from bot.chat.service import Answering, FeedbackStore
from bot.metrics.registry import STAGES, Metrics
from bot.prices import Prices, price_of
from rag.errors import LLMError
from rag.ports import LLM, LLMRequest, LLMResponse, TextSink
from rag.spans import span
from rag.types import Answer, GradeSource, Question
from sync.report import SyncSummary


class MeteredAnswers:
    """The pipeline as chat surfaces call it: each answer counted with its stage times, the
    questions in flight, and a `sift.answer` span around it (its stages' spans inside; the
    question's text only when SIFT_TRACING__QUESTION_TEXT allows it)."""

    def __init__(self, inner: Answering, metrics: Metrics, *,
                 question_text: bool = False) -> None:
        self._inner = inner
        self._m = metrics
        self._question_text = question_text

    async def answer(self, question: Question, preview: TextSink | None = None) -> Answer:
        with span("sift.answer") as traced:
            if traced is not None:
                traced.set_attribute("sift.platform", question.context.platform)
                if self._question_text:
                    traced.set_attribute("sift.question", question.text)
            self._m.in_flight.inc()
            try:
                answer = await self._inner.answer(question, preview)
            finally:
                self._m.in_flight.dec()
            if traced is not None:
                traced.set_attributes({"sift.mode": answer.mode.value,
                                       "sift.outcome": answer.status.value,
                                       "sift.correlation_id": answer.question.correlation_id})
        self.count(answer)
        return answer

    def count(self, answer: Answer) -> None:
        m = self._m
        m.answers.labels(answer.question.context.platform, answer.mode.value,
                         answer.status.value).inc()
        for stage in STAGES:
            if stage in answer.timings_ms:
                m.stage_seconds.labels(stage).observe(answer.timings_ms[stage] / 1000)
        sources = [c.grade.source for c in answer.candidates if c.grade is not None]
        hits = sources.count(GradeSource.CACHE)
        misses = sources.count(GradeSource.LLM)
        if hits:
            m.grade_cache.labels("hit").inc(hits)
        if misses:
            m.grade_cache.labels("miss").inc(misses)


class MeteredFeedback:
    """The vote store, counting each vote as it is stored."""

    def __init__(self, inner: FeedbackStore, metrics: Metrics) -> None:
        self._inner = inner
        self._m = metrics

    def vote(self, interaction_id: int, user: str, vote: int, channel: str,
             comment: str | None = None) -> None:
        self._inner.vote(interaction_id, user, vote, channel, comment)
        self._m.votes.labels("up" if vote > 0 else "down").inc()

    def retract(self, interaction_id: int, user: str) -> None:
        self._inner.retract(interaction_id, user)

    def retract_matching(self, interaction_id: int, user: str, vote: int,
                         channel: str) -> bool:
        return self._inner.retract_matching(interaction_id, user, vote, channel)

    def add_comment(self, interaction_id: int, user: str, comment: str) -> None:
        self._inner.add_comment(interaction_id, user, comment)


class MeteredLLM:
    """An LLM port whose every call is counted by provider and model: calls, tokens, the
    estimated cost, and failures by kind. The one place LLM metrics are taken."""

    def __init__(self, inner: LLM, metrics: Metrics, provider: str, prices: Prices) -> None:
        self._inner = inner
        self._m = metrics
        self._provider = provider
        self._prices = prices

    async def complete(self, request: LLMRequest) -> LLMResponse:
        try:
            response = await self._inner.complete(request)
        except LLMError as exc:
            self._failed(request, exc.kind)
            raise
        self._count(request, response)
        return response

    async def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        try:
            response = await self._inner.stream(request, on_text)
        except LLMError as exc:
            self._failed(request, exc.kind)
            raise
        self._count(request, response)
        return response

    def _failed(self, request: LLMRequest, kind: str) -> None:
        self._m.llm_errors.labels(self._provider, request.model, kind).inc()

    def _count(self, request: LLMRequest, response: LLMResponse) -> None:
        m, model, usage = self._m, response.model or request.model, response.usage
        m.llm_calls.labels(self._provider, model, request.purpose or "other").inc()
        for kind, tokens in (("input", usage.input_tokens), ("output", usage.output_tokens),
                             ("cache_read", usage.cache_read_tokens),
                             ("cache_write", usage.cache_write_tokens)):
            if tokens:
                m.llm_tokens.labels(self._provider, model, kind).inc(tokens)
        per_in, per_out = price_of(model, self._prices)
        cost = (usage.input_tokens * per_in + usage.output_tokens * per_out) / 1_000_000
        if cost:
            m.llm_cost.labels(self._provider, model).inc(cost)


class SyncMeter:
    """The sync runner's observer: each recorded run by outcome, its documents, and when
    each source last synced without failing."""

    def __init__(self, metrics: Metrics) -> None:
        self._m = metrics

    def finished(self, summary: SyncSummary) -> None:
        m, c, name = self._m, summary.counts, summary.source
        outcome = "partial" if c.failed or summary.errors else "ok"
        m.sync_runs.labels(name, "full" if summary.full else "incremental", outcome).inc()
        for change, count in (("added", c.added), ("updated", c.updated),
                              ("deleted", c.deleted), ("failed", c.failed)):
            if count:
                m.sync_documents.labels(name, change).inc(count)
        if outcome == "ok":
            m.sync_last_success.labels(name).set(time.time())

    def failed(self, source: str, full: bool) -> None:
        self._m.sync_runs.labels(source, "full" if full else "incremental", "failed").inc()
