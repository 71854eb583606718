"""The built-in `answers` source: each approved answer draft as one document, cited to its
thread ("Answered by Dana in #it-help, 3 Dec 2026")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Protocol

from storage.answers import StoredDraft
from sync.connectors.base import DocumentGone, Fetched, SourceDocument

SOURCE = "answers"  # the source's name in the index; no sift.toml entry names it
DOC_TYPE = "answer"
_PREFIX = "answer-"


def day(when: datetime) -> str:
    return f"{when.day} {when:%b %Y}"


def credit(draft: StoredDraft) -> str:
    """The citation's title: who answered, where, when."""
    who = draft.author_name or draft.author
    return f"Answered by {who} in {draft.channel_name or 'a conversation'}, " \
        f"{day(draft.answered_at)}"


def as_document(draft: StoredDraft) -> SourceDocument:
    """Question and answer, readable by the audience of the conversation it was asked in."""
    body = f"# {draft.question}\n\n{draft.answer}\n"
    return SourceDocument(
        doc_id=draft.doc_id, title=credit(draft), body=body, url=draft.link,
        authors=(draft.author_name or draft.author,), channels=(draft.channel_name,),
        doc_type=DOC_TYPE, published_at=draft.answered_at,
        updated_at=draft.reviewed_at or draft.answered_at, access=tuple(draft.access))


def draft_id(doc_id: str) -> int | None:
    tail = doc_id.removeprefix(_PREFIX)
    return int(tail) if doc_id.startswith(_PREFIX) and tail.isdigit() else None


class ApprovedDrafts(Protocol):
    def approved(self, ids: Sequence[int] | None = None) -> list[StoredDraft]: ...


class AnswerSource:
    """A connector over the approved drafts (the database is the platform): a full pass
    lists them all, `fetch` syncs the ones just approved or withdrawn."""

    cheap_ids = True
    empty_hint = "no answer is approved yet (sift answers list)"

    def __init__(self, drafts: ApprovedDrafts) -> None:
        self._drafts = drafts

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        for draft in await asyncio.to_thread(self._drafts.approved):
            yield as_document(draft)

    async def list_ids(self) -> set[str]:
        return {d.doc_id for d in await asyncio.to_thread(self._drafts.approved)}

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        wanted = {i: d for d in doc_ids if (i := draft_id(d)) is not None}
        found = {d.id: d for d in await asyncio.to_thread(self._drafts.approved,
                                                           list(wanted))}
        for number, doc_id in wanted.items():
            draft = found.get(number)
            yield as_document(draft) if draft is not None else DocumentGone(doc_id)
