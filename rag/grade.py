"""Grading with Claude: does each candidate actually answer the question? Score plus reason."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag import prompts
from rag.config import GradingConfig
from rag.errors import LLMError
from rag.ports import LLM, LLMRequest
from rag.types import Candidate, Grade, GradeSource, Usage

log = logging.getLogger(__name__)

GRADE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
    "additionalProperties": False,
}
BATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"grades": {"type": "array", "items": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "score": {"type": "number"},
                       "reason": {"type": "string"}},
        "required": ["id", "score", "reason"],
        "additionalProperties": False,
    }}},
    "required": ["grades"],
    "additionalProperties": False,
}
MAX_REASON_CHARS = 300


class GradeParseError(ValueError):
    """The grader's output was not the JSON it was asked for."""


class Scoreboard:
    """The grades read so far while candidates are graded, so that the answer can begin
    once `share` of them are in instead of after the slowest call (rag/early_answer.py)."""

    def __init__(self, total: int, share: float) -> None:
        self.grades: dict[str, Grade] = {}
        self.reached = asyncio.Event()
        self._needed = max(1, math.ceil(total * share))

    def add(self, chunk_id: str, grade: Grade) -> None:
        """A candidate's grade (a failed call's fallback counts: it is final too)."""
        self.grades[chunk_id] = grade
        if len(self.grades) >= self._needed:
            self.reached.set()


@dataclass
class GradingResult:
    grades: dict[str, Grade] = field(default_factory=dict)  # by chunk_id
    usage: Usage = field(default_factory=Usage)
    failures: int = 0  # candidates whose grading failed (they carry fallback grades)
    # Score first (GradingConfig.score_first): the calls still writing their reasons once
    # every score is in. Until `settled()`, such a grade has its score and an empty reason.
    pending: list[asyncio.Task[None]] = field(default_factory=list)
    board: Scoreboard | None = None  # told each grade as it is read

    def put(self, chunk_id: str, grade: Grade) -> None:
        self.grades[chunk_id] = grade
        if self.board is not None:
            self.board.add(chunk_id, grade)

    async def settled(self) -> GradingResult:
        """Every reason written (or given up on), and every call's tokens counted."""
        while self.pending:
            waiting, self.pending = self.pending, []
            await asyncio.gather(*waiting, return_exceptions=True)
        return self


class Grader(Protocol):
    async def grade(self, question: str, candidates: Sequence[Candidate],
                    board: Scoreboard | None = None) -> GradingResult:
        """Every candidate's grade; `board`, when given, is told each one as it is read."""
        ...


def _score_and_reason(item: Any) -> tuple[float, str]:
    if not isinstance(item, dict):
        raise GradeParseError(f"expected an object, got {type(item).__name__}")
    score, reason = item.get("score"), item.get("reason")
    if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
        raise GradeParseError(f"score is not a number: {score!r}")
    if not isinstance(reason, str) or not reason.strip():
        raise GradeParseError("reason is missing")
    return min(1.0, max(0.0, float(score))), " ".join(reason.split())[:MAX_REASON_CHARS]


def parse_grade(text: str) -> tuple[float, str]:
    """Parse `{"score": x, "reason": "..."}`; scores outside [0, 1] are clamped."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise GradeParseError(f"not JSON: {text[:80]!r}") from exc
    return _score_and_reason(data)


# The score of a reply still being written, once it is whole: `{"score": 0.8,` (the schema
# lists it first, and structured outputs keep that order).
_LEADING_SCORE = re.compile(r'^\s*\{\s*"score"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*[,}]')
REASON_CUT_OFF = "the grader stopped before giving its reason"


def leading_score(text: str) -> float | None:
    """The score at the start of a partial grade, clamped to [0, 1]; None until it is whole."""
    found = _LEADING_SCORE.match(text)
    return None if found is None else min(1.0, max(0.0, float(found.group(1))))


def parse_batch(text: str, ids: Sequence[str]) -> dict[str, tuple[float, str]]:
    """Parse a batch reply; entries for unknown ids are ignored, missing ids are simply absent."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise GradeParseError(f"not JSON: {text[:80]!r}") from exc
    items = data.get("grades") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise GradeParseError("no 'grades' list")
    wanted, parsed = set(ids), {}
    for item in items:
        key = str(item.get("id", "")) if isinstance(item, dict) else ""
        if key in wanted and key not in parsed:
            try:
                parsed[key] = _score_and_reason(item)
            except GradeParseError:
                continue  # one bad entry costs only its own grade
    return parsed


def document_block(candidate: Candidate, ident: str = "") -> str:
    """The candidate as untrusted data, with the metadata the grader judges context by."""
    c = candidate.chunk
    attrs = f' id="{ident}"' if ident else ""
    meta = [f"title: {c.title}", f"type: {c.doc_type or 'unknown'}"]
    if c.section:
        meta.append(f"section: {c.section}")
    if c.tags:
        meta.append("tags: " + ", ".join(c.tags))
    body = c.text.replace("</document>", "</ document>")  # keep the wrapper unbreakable
    return f"<document{attrs} untrusted=\"true\">\n" + "\n".join(meta) + f"\n\n{body}\n</document>"


def fallback(reason: str) -> Grade:
    return Grade(score=None, reason=reason, source=GradeSource.FALLBACK)


class LLMGrader:
    """Grades candidates with the fast model, pointwise (one call each) or in batches."""

    def __init__(self, llm: LLM, model: str, config: GradingConfig,
                 cache_min_tokens: int = 1024) -> None:
        self._llm = llm
        self._model = model
        self._config = config
        self._cache_min_chars = cache_min_tokens * 4  # ~4 characters per token

    async def grade(self, question: str, candidates: Sequence[Candidate],
                    board: Scoreboard | None = None) -> GradingResult:
        result = GradingResult(board=board)
        deadline = time.monotonic() + self._config.deadline_s
        waves = self._waves(candidates)
        for number, wave in enumerate(waves):
            await self._grade_wave(question, wave, result, deadline)
            if self._enough(result) and number + 1 < len(waves):
                log.info("early stop after %d of %d candidates", len(result.grades),
                         len(candidates))
                break
        return result

    def _waves(self, candidates: Sequence[Candidate]) -> list[Sequence[Candidate]]:
        if not self._config.early_stop:
            return [candidates]
        size = self._config.early_stop_wave
        return [candidates[i:i + size] for i in range(0, len(candidates), size)]

    def _enough(self, result: GradingResult) -> bool:
        if not self._config.early_stop:
            return False
        strong = [g for g in result.grades.values()
                  if g.score is not None and g.score >= self._config.early_stop_score]
        return len(strong) >= self._config.early_stop_enough

    async def _grade_wave(self, question: str, wave: Sequence[Candidate],
                          result: GradingResult, deadline: float) -> None:
        groups: list[Sequence[Candidate]] = (
            [wave[i:i + self._config.batch_size] for i in range(0, len(wave),
                                                                self._config.batch_size)]
            if self._config.strategy == "batched" else [[c] for c in wave])
        gate = asyncio.Semaphore(self._config.concurrency)

        async def run(group: Sequence[Candidate]) -> None:
            async with gate:
                await self._grade_group(question, group, result)

        tasks = [asyncio.create_task(run(g)) for g in groups]
        remaining = max(0.0, deadline - time.monotonic())
        try:
            _, pending = await asyncio.wait(tasks, timeout=remaining)
        except asyncio.CancelledError:  # the answer no longer needs them: no call left behind
            for task in tasks:
                task.cancel()
            raise
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
            log.warning("grading deadline (%.1fs) passed with %d call(s) unfinished",
                        self._config.deadline_s, len(pending))
        for candidate in wave:
            if candidate.chunk.chunk_id not in result.grades:
                result.put(candidate.chunk.chunk_id, fallback("not graded before deadline"))
                result.failures += 1

    async def _grade_group(self, question: str, group: Sequence[Candidate],
                           result: GradingResult) -> None:
        batched = self._config.strategy == "batched"
        ids = [f"c{c.rank}" for c in group]
        docs = "\n\n".join(document_block(c, i if batched else "")
                           for c, i in zip(group, ids, strict=True))
        system = prompts.load("grade_batch" if batched else "grade")
        request = LLMRequest(
            model=self._model, system=system, max_tokens=200 * len(group) + 100,
            messages=(("user", f"Question: {question}\n\n{docs}"),),
            json_schema=BATCH_SCHEMA if batched else GRADE_SCHEMA,
            timeout_s=self._config.call_timeout_s,
            # Only the system block is cached (it is the one prefix every call shares).
            cache_system=len(system) >= self._cache_min_chars, purpose="grade")
        if self._config.score_first and not batched:
            await self._grade_score_first(request, group[0], result)
            return
        try:
            response = await self._llm.complete(request)
            result.usage += response.usage
            parsed = (parse_batch(response.text, ids) if batched
                      else {ids[0]: parse_grade(response.text)})
        except (LLMError, GradeParseError) as exc:
            log.warning("grading %d candidate(s) failed: %s", len(group), exc)
            parsed = {}
        for candidate, ident in zip(group, ids, strict=True):
            if ident in parsed:
                score, reason = parsed[ident]
                result.put(candidate.chunk.chunk_id,
                           Grade(score, reason, GradeSource.LLM, self._model))
            else:
                result.put(candidate.chunk.chunk_id, fallback("grader unavailable"))
                result.failures += 1

    async def _grade_score_first(self, request: LLMRequest, candidate: Candidate,
                                 result: GradingResult) -> None:
        """Returns once the score is read; the call goes on writing its reason, which joins
        the grade when the result is `settled()` (the answer need not wait for it)."""
        scored: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        call = asyncio.create_task(self._stream_grade(request, candidate, result, scored))
        result.pending.append(call)
        try:
            await asyncio.shield(scored)
        except asyncio.CancelledError:  # past the deadline: the call goes too
            call.cancel()
            raise

    async def _stream_grade(self, request: LLMRequest, candidate: Candidate,
                            result: GradingResult, scored: asyncio.Future[None]) -> None:
        chunk_id, written = candidate.chunk.chunk_id, []

        async def on_text(delta: str) -> None:
            written.append(delta)
            score = None if scored.done() else leading_score("".join(written))
            if score is not None:
                result.put(chunk_id, Grade(score, "", GradeSource.LLM, self._model))
                scored.set_result(None)

        try:
            response = await self._llm.stream(request, on_text)
            result.usage += response.usage
            score, reason = parse_grade(response.text)
            result.put(chunk_id, Grade(score, reason, GradeSource.LLM, self._model))
        except (LLMError, GradeParseError) as exc:
            if scored.done():  # the score stands; only its reason is missing
                early = result.grades[chunk_id]
                result.put(chunk_id, Grade(early.score, REASON_CUT_OFF, early.source,
                                           early.model))
                log.warning("a grade's reason was cut off: %s", exc)
            else:
                log.warning("grading 1 candidate failed: %s", exc)
                result.put(chunk_id, fallback("grader unavailable"))
                result.failures += 1
        finally:
            if not scored.done():
                scored.set_result(None)
