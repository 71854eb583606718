"""Content gaps: unanswered and thumbs-down questions grouped by meaning, largest group first."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
from aiohttp import web

from bot.admin.console import KEY, render, sees_restricted
from rag.ports import Embedder
from storage.columns import utc_now
from storage.console_docs import (
    GapQuestion,
    NearDocument,
    gap_questions,
    nearest_documents,
    restricted_ids,
)
from storage.db import Database
from storage.question_vectors import known, store, stored

log = logging.getLogger(__name__)

SIMILAR = 0.72  # cosine at which two questions ask the same thing (all-MiniLM-L6-v2)
WINDOWS = {"7d": 7, "30d": 30, "90d": 90}


@dataclass
class Group:
    questions: list[GapQuestion]
    documents: list[NearDocument] = field(default_factory=list)

    @property
    def unanswered(self) -> int:
        return sum(1 for q in self.questions if q.unanswered)


def group_questions(questions: Sequence[GapQuestion],
                    vectors: Sequence[Sequence[float] | np.ndarray],
                    threshold: float = SIMILAR) -> list[Group]:
    """Greedy single pass: each question joins the group whose first question it is most
    similar to (cosine >= threshold), else starts one. Largest groups first, then newest."""
    groups: list[Group] = []
    centres = np.zeros((len(questions), len(vectors[0]) if vectors else 1), dtype=np.float32)
    for question, vector in zip(questions, vectors, strict=True):
        v = np.asarray(vector, dtype=np.float32)
        v = v / (np.linalg.norm(v) or 1.0)
        if groups:
            sims = centres[:len(groups)] @ v
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                groups[best].questions.append(question)
                continue
        centres[len(groups)] = v
        groups.append(Group([question]))
    groups.sort(key=lambda g: (-len(g.questions), -max(q.id for q in g.questions)))
    return groups


class GapIndexer:
    """Embeds the newest gap questions in the background and stores their vectors, so the
    gaps page only reads them. The newest GAP_LIMIT of the longest window contain every
    window's newest GAP_LIMIT, so a pass embeds at most that many, usually a handful."""

    def __init__(self, db: Database, embedder: Embedder, interval_s: float = 15.0) -> None:
        self._db = db
        self._embedder = embedder
        self._interval_s = interval_s
        self._lock = asyncio.Lock()  # one pass at a time: a second would embed the same

    async def catch_up(self, batch: int = 64) -> int:
        """Embed what is missing now; the number of questions embedded."""
        async with self._lock:
            return await self._pass(batch)

    async def _pass(self, batch: int) -> int:
        since = utc_now() - timedelta(days=max(WINDOWS.values()))
        questions = await asyncio.to_thread(gap_questions, self._db, since)
        model = self._embedder.name
        have = await asyncio.to_thread(known, self._db, [q.id for q in questions], model)
        missing = [q for q in questions if q.id not in have]
        for start in range(0, len(missing), batch):
            part = missing[start:start + batch]
            vectors = await self._embedder.embed_documents([q.question for q in part])
            await asyncio.to_thread(store, self._db, model,
                                    {q.id: v for q, v in zip(part, vectors, strict=True)})
        return len(missing)

    async def run(self) -> None:
        while True:
            try:
                done = await self.catch_up()
                if done:
                    log.info("content gaps: embedded %d new question(s)", done)
            except Exception:  # the next pass retries; the page shows what is stored
                log.exception("content gaps: embedding questions failed")
            await asyncio.sleep(self._interval_s)

    async def background(self, _app: web.Application) -> AsyncIterator[None]:
        """aiohttp cleanup context: runs while the server does."""
        task = asyncio.create_task(self.run())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


INDEXER = web.AppKey("gap_indexer", GapIndexer)


async def gaps_page(request: web.Request) -> web.StreamResponse:
    console = request.app[KEY]
    window = request.query.get("window", "30d")
    since = utc_now() - timedelta(days=WINDOWS.get(window, 30))
    questions = await asyncio.to_thread(gap_questions, console.db, since)
    vectors = await asyncio.to_thread(stored, console.db, [q.id for q in questions],
                                      console.embedder.name)
    ready = [q for q in questions if q.id in vectors]
    groups = group_questions(ready, [vectors[q.id] for q in ready])[:30]
    for group in groups:
        ids = [q.id for q in group.questions]
        group.documents = await asyncio.to_thread(nearest_documents, console.db, ids)
    if not sees_restricted(request):
        found = [d.doc_id for g in groups for d in g.documents]
        hidden = await asyncio.to_thread(restricted_ids, console.db, found)
        for group in groups:
            group.documents = [NearDocument("", "(restricted)", "", d.score)
                               if d.doc_id in hidden else d for d in group.documents]
    return render(request, "gaps.html", groups=groups, considered=len(ready),
                  pending=len(questions) - len(ready), window=window, windows=list(WINDOWS))
