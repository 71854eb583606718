"""Content gaps: unanswered and thumbs-down questions grouped by meaning, largest group first."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
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

SIMILAR = 0.72  # cosine at which two questions ask the same thing (all-MiniLM-L6-v2)
WINDOWS = {"7d": 7, "30d": 30, "90d": 90}


@dataclass
class Group:
    questions: list[GapQuestion]
    documents: list[NearDocument] = field(default_factory=list)

    @property
    def unanswered(self) -> int:
        return sum(1 for q in self.questions if q.unanswered)


def group_questions(questions: Sequence[GapQuestion], vectors: Sequence[Sequence[float]],
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


class VectorCache:
    """Question vectors kept between page views, so a reload embeds only new questions."""

    def __init__(self, embedder: Embedder, size: int = 5000) -> None:
        self._embedder = embedder
        self._size = size
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    async def vectors(self, texts: Sequence[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            for text, vector in zip(missing, await self._embedder.embed_documents(missing),
                                    strict=True):
                self._vectors[text] = list(vector)
        found = [self._vectors[t] for t in texts]
        for text in texts:
            self._vectors.move_to_end(text)
        while len(self._vectors) > self._size:
            self._vectors.popitem(last=False)
        return found


CACHE = web.AppKey("gap_vectors", VectorCache)


async def gaps_page(request: web.Request) -> web.StreamResponse:
    console = request.app[KEY]
    window = request.query.get("window", "30d")
    since = utc_now() - timedelta(days=WINDOWS.get(window, 30))
    questions = await asyncio.to_thread(gap_questions, console.db, since)
    vectors = await request.app[CACHE].vectors([q.question for q in questions])
    groups = group_questions(questions, vectors)[:30]
    for group in groups:
        ids = [q.id for q in group.questions]
        group.documents = await asyncio.to_thread(nearest_documents, console.db, ids)
    if not sees_restricted(request):
        found = [d.doc_id for g in groups for d in g.documents]
        hidden = await asyncio.to_thread(restricted_ids, console.db, found)
        for group in groups:
            group.documents = [NearDocument("", "(restricted)", "", d.score)
                               if d.doc_id in hidden else d for d in group.documents]
    return render(request, "gaps.html", groups=groups, considered=len(questions),
                  window=window, windows=list(WINDOWS))
