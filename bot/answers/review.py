"""Reviewing answer drafts: approve (indexed at once, then asked again), edit, reject; each
action audited with who and the value before and after."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bot.answers.documents import SOURCE
from bot.answers.reask import Reasked
from rag.errors import InputError, SiftError
from storage.answers import APPROVED, PENDING, REJECTED, AnswerDrafts, StoredDraft
from storage.audit import AuditLog

log = logging.getLogger(__name__)
Index = Callable[[Sequence[str]], Awaitable[object]]  # sync these answer doc ids now


class Checker(Protocol):
    async def check(self, draft: StoredDraft) -> Reasked: ...


@dataclass(frozen=True)
class Reviewed:
    draft: StoredDraft
    reasked: Reasked | None = None


def _audited(d: StoredDraft) -> dict[str, Any]:
    return {"status": d.status, "question": d.question, "answer": d.answer,
            "reason": d.reason}


def _missing(draft_id: int) -> InputError:
    return InputError(f"no answer draft {draft_id}",
                      user_message=f"There is no answer draft {draft_id} (sift answers list).")


class AnswerReview:
    """`index` syncs the named documents of the `answers` source (the runner's locks);
    `checker` runs the re-ask check after an approval (None: skipped)."""

    def __init__(self, drafts: AnswerDrafts, audit: AuditLog, index: Index,
                 checker: Checker | None = None) -> None:
        self._drafts = drafts
        self._audit = audit
        self._index = index
        self._checker = checker

    async def _get(self, draft_id: int) -> StoredDraft:
        found = await asyncio.to_thread(self._drafts.get, draft_id)
        if found is None:
            raise _missing(draft_id)
        return found

    async def approve(self, draft_id: int, actor: str, *, address: str = "",
                      question: str | None = None, answer: str | None = None) -> Reviewed:
        """Indexed before this returns; if indexing fails the draft is pending again."""
        before = await self._get(draft_id)
        _check_text(question, answer)
        done = await asyncio.to_thread(self._drafts.review, draft_id, APPROVED, actor,
                                       question=question, answer=answer)
        if done is None:
            raise _missing(draft_id)
        try:
            await self._index([done.doc_id])
        except Exception as exc:
            await asyncio.to_thread(self._drafts.review, draft_id, before.status,
                                    before.reviewed_by, reason=before.reason)
            log.exception("indexing approved answer %d failed", draft_id)
            raise SiftError(f"indexing answer {draft_id} failed: {exc}", user_message=(
                f"Answer {draft_id} could not be indexed, so it stays {before.status}: "
                "check that Weaviate is running, then approve it again.")) from exc
        await asyncio.to_thread(self._audit.record, actor, "answer_approved",
                                f"answer {draft_id}", address=address,
                                before=_audited(before), after=_audited(done))
        reasked = await self._checker.check(done) if self._checker is not None else None
        found = await asyncio.to_thread(self._drafts.get, draft_id)
        return Reviewed(found or done, reasked)

    async def reject(self, draft_id: int, actor: str, reason: str, *,
                     address: str = "") -> Reviewed:
        """A reason is required; an approved answer rejected later leaves the index."""
        before = await self._get(draft_id)
        if not reason.strip():
            raise InputError("no reason", user_message="Say why the answer is rejected "
                             "(--reason, or the form's reason field).")
        done = await asyncio.to_thread(self._drafts.review, draft_id, REJECTED, actor,
                                       reason=reason.strip())
        assert done is not None
        if before.status == APPROVED:
            await self._index([done.doc_id])  # no longer approved: removed
        await asyncio.to_thread(self._audit.record, actor, "answer_rejected",
                                f"answer {draft_id}", address=address,
                                before=_audited(before), after=_audited(done))
        return Reviewed(done)

    async def edit(self, draft_id: int, actor: str, *, question: str | None,
                   answer: str | None, address: str = "") -> Reviewed:
        """Change the words; an approved answer is indexed again at once."""
        before = await self._get(draft_id)
        _check_text(question, answer)
        done = await asyncio.to_thread(self._drafts.edit, draft_id,
                                       question=question or before.question,
                                       answer=answer or before.answer)
        assert done is not None
        if done.status == APPROVED:
            await self._index([done.doc_id])
        await asyncio.to_thread(self._audit.record, actor, "answer_edited",
                                f"answer {draft_id}", address=address,
                                before=_audited(before), after=_audited(done))
        return Reviewed(done)


def _check_text(question: str | None, answer: str | None) -> None:
    for name, value in (("question", question), ("answer", answer)):
        if value is not None and not value.strip():
            raise InputError(f"empty {name}", user_message=f"The {name} cannot be empty.")


def runner_index(run_ids: Callable[[str, Sequence[str]], Awaitable[object]]) -> Index:
    """Index answers through a SyncRunner's `run_ids` (its locks, its write order)."""
    async def index(doc_ids: Sequence[str]) -> object:
        return await run_ids(SOURCE, doc_ids)
    return index


__all__ = ["PENDING", "AnswerReview", "Reviewed", "runner_index"]
