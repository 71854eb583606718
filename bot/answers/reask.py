"""The re-ask check: once an answer is approved, its question and the gaps' near-duplicates
are asked again as their askers' audience would, and a gap closes only when now answered."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

import numpy as np

from bot.chat.access import AccessResolver, Asker, Audience, Visibility
from bot.chat.capture import DIRECT_KIND
from rag.ports import Embedder
from rag.types import Answer, AnswerStatus, AskContext, Question
from storage.answers import GapAsk, StoredDraft

log = logging.getLogger(__name__)
ANSWERED, NOT_ANSWERED, FAILED = "answered", "not_answered", "failed"
SIMILAR = 0.72  # the gaps page's "same question" cosine (bot/admin/gaps.py)
GAP_WINDOW = timedelta(days=90)


class ReaskStore(Protocol):
    """Blocking calls."""

    def set_reask(self, draft_id: int, outcome: str) -> None: ...

    def close_gaps(self, draft_id: int, interaction_ids: Sequence[int]) -> None: ...

    def gaps(self, since_days: int) -> list[GapAsk]: ...


@dataclass(frozen=True)
class Reasked:
    outcome: str  # ANSWERED, NOT_ANSWERED, FAILED
    cited_entry: bool  # the answer cites the approved entry itself
    closed: tuple[int, ...] = ()  # gap questions answered now


class Pipeline(Protocol):
    async def answer(self, question: Question) -> Answer: ...


class Reasker:
    def __init__(self, pipeline: Pipeline, access: AccessResolver, embedder: Embedder,
                 store: ReaskStore) -> None:
        self._pipeline = pipeline
        self._access = access
        self._embedder = embedder
        self._store = store

    async def check(self, draft: StoredDraft) -> Reasked:
        """Never raises: a failed check is recorded as `failed` and logged."""
        try:
            done = await self._check(draft)
        except Exception:
            log.exception("re-ask check of answer draft %d failed", draft.id)
            done = Reasked(FAILED, False)
        await asyncio.to_thread(self._store.set_reask, draft.id, done.outcome)
        if done.closed:
            await asyncio.to_thread(self._store.close_gaps, draft.id, done.closed)
        return done

    async def _check(self, draft: StoredDraft) -> Reasked:
        alone = draft.channel_kind == DIRECT_KIND
        answer = await self._ask(draft.question, Asker(draft.platform, draft.asker,
                                                       draft.workspace),
                                 "" if alone else draft.channel)
        cited = any(c.doc_id == draft.doc_id for c in answer.citations)
        outcome = ANSWERED if _answered(answer.status) else NOT_ANSWERED
        closed: list[int] = []
        if outcome == ANSWERED and draft.interaction_id is not None:
            closed.append(draft.interaction_id)
        for gap in await self._near(draft):
            if gap.id in closed:
                continue
            # As the gap's own asker's channel reads: an answer only some may read closes
            # no one else's gap.
            again = await self._ask(gap.question, Asker(gap.platform, gap.user, gap.workspace),
                                    gap.channel)
            if _answered(again.status):
                closed.append(gap.id)
        log.info("re-ask of answer draft %d: %s (cites it: %s); %d gap(s) closed", draft.id,
                 outcome, cited, len(closed))
        return Reasked(outcome, cited, tuple(closed))

    async def _ask(self, text: str, asker: Asker, channel: str) -> Answer:
        """As its readers would: everyone in `channel`, or the asker alone ("")."""
        groups = await self._access.groups_for(asker, Audience(
            Visibility.CHANNEL if channel else Visibility.PRIVATE, (), channel))
        context = AskContext(platform=asker.platform, workspace=asker.workspace,
                             channel=channel, user=asker.user, access_groups=groups)
        return await self._pipeline.answer(Question(text, context))

    async def _near(self, draft: StoredDraft) -> list[GapAsk]:
        """Gap questions that ask the same thing as the draft's (cosine >= SIMILAR)."""
        gaps = await asyncio.to_thread(self._store.gaps, GAP_WINDOW.days)
        if not gaps:
            return []
        vectors = np.asarray(await self._embedder.embed_documents(
            [draft.question, *(g.question for g in gaps)]), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
        scores = vectors[1:] @ vectors[0]
        return [g for g, score in zip(gaps, scores, strict=True) if score >= SIMILAR]


def _answered(status: AnswerStatus) -> bool:
    return status in (AnswerStatus.ANSWERED, AnswerStatus.DEGRADED)
