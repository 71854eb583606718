"""Reuses earlier grades: same question, same chunk content, same grader version -> same grade."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Sequence

from rag.grade import Grader, GradingResult, Scoreboard
from rag.ports import GradeCache, GradeKey
from rag.types import Candidate, Grade, GradeSource

log = logging.getLogger(__name__)

_SPACES = re.compile(r"\s+")


def normalise_question(text: str) -> str:
    """Case, spacing and trailing punctuation do not change what is being asked."""
    return _SPACES.sub(" ", text.casefold()).strip().rstrip("?!.").strip()


def question_hash(text: str) -> str:
    return hashlib.sha256(normalise_question(text).encode("utf-8")).hexdigest()


class CachedGrader:
    """Wraps a grader: cached candidates cost no call; fresh LLM grades are stored afterwards."""

    def __init__(self, inner: Grader, cache: GradeCache, version: str) -> None:
        self._inner = inner
        self._cache = cache
        self._version = version

    def _key(self, qhash: str, candidate: Candidate) -> GradeKey:
        chunk = candidate.chunk
        return GradeKey(qhash, chunk.chunk_id, chunk.content_hash, self._version)

    async def grade(self, question: str, candidates: Sequence[Candidate],
                    board: Scoreboard | None = None) -> GradingResult:
        qhash = question_hash(question)
        keys = {c.chunk.chunk_id: self._key(qhash, c) for c in candidates}
        try:
            cached = await asyncio.to_thread(self._cache.get_many, list(keys.values()))
        except Exception:  # a broken cache must not cost the answer; grade everything instead
            log.exception("grade cache lookup failed")
            cached = {}
        result = GradingResult(board=board)
        misses = []
        for candidate in candidates:
            hit = cached.get(keys[candidate.chunk.chunk_id])
            if hit is None:
                misses.append(candidate)
            else:
                result.put(candidate.chunk.chunk_id,
                           Grade(hit.score, hit.reason, GradeSource.CACHE, hit.model))
        if misses:
            fresh = await self._inner.grade(question, misses, board)
            result.grades.update(fresh.grades)
            result.usage, result.failures = fresh.usage, fresh.failures
            if fresh.pending:  # score first: stored once the reasons are written
                result.pending.append(asyncio.create_task(self._settle(fresh, result, keys)))
            else:
                await self._store(fresh.grades, keys)
        return result

    async def _settle(self, fresh: GradingResult, result: GradingResult,
                      keys: dict[str, GradeKey]) -> None:
        await fresh.settled()
        result.grades.update(fresh.grades)
        result.usage, result.failures = fresh.usage, fresh.failures
        await self._store(fresh.grades, keys)

    async def _store(self, grades: dict[str, Grade], keys: dict[str, GradeKey]) -> None:
        # Only real verdicts are worth remembering; a fallback is a failure, not a grade.
        worth = {keys[cid]: g for cid, g in grades.items()
                 if g.source is GradeSource.LLM and g.score is not None}
        if not worth:
            return
        try:
            await asyncio.to_thread(self._cache.put_many, worth)
        except Exception:
            log.exception("grade cache write failed")
