"""Answer drafts: people's replies captured from threads, reviewed, approved or rejected."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import exists, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from storage.columns import utc_now
from storage.db import Database
from storage.models import AnswerDraft, ClosedGap, Feedback, HelpQuestion, Interaction, table

PENDING, APPROVED, REJECTED = "pending", "approved", "rejected"
STATUSES = (PENDING, APPROVED, REJECTED)
_drafts = table(AnswerDraft)


@dataclass(frozen=True)
class NewDraft:
    """What a capture knows of a reply taken as an answer."""

    captured_by: str  # reaction, shortcut
    platform: str
    workspace: str
    channel: str
    channel_name: str
    channel_kind: str  # public, private, direct
    thread: str
    message_ref: str
    asker: str
    author: str
    author_name: str
    answered_at: datetime
    link: str
    question: str
    answer: str
    reply: str
    context: str
    access: tuple[str, ...]
    interaction_id: int | None = None


@dataclass(frozen=True)
class StoredDraft(NewDraft):
    id: int = 0
    created_at: datetime | None = None
    status: str = PENDING
    reviewed_by: str = ""
    reviewed_at: datetime | None = None
    reason: str = ""
    reask: str = ""

    @property
    def doc_id(self) -> str:
        """Its document in the `answers` source."""
        return f"answer-{self.id}"

    def as_json(self) -> dict[str, Any]:
        values = asdict(self)
        for key in ("answered_at", "created_at", "reviewed_at"):
            values[key] = values[key].isoformat() if values[key] else None
        values["access"] = list(self.access)
        return values


@dataclass(frozen=True)
class ThreadAsk:
    """Sift's record of the question a thread started with."""

    interaction_id: int
    user: str
    question: str
    unresolved: bool  # "not covered", a 👎 on the answer, or "Still need help?" (help channels)


UNANSWERED_STATUSES = ("no_answer", "not_indexed")


@dataclass(frozen=True)
class GapAsk:
    """A gap's question (unanswered or voted 👎, not closed) and where it was asked."""

    id: int
    question: str
    platform: str
    workspace: str
    channel: str  # "" for a private place (a DM, the terminal): asked as the asker alone
    user: str


_NAMES = [f.name for f in fields(StoredDraft)]


def _stored(row: Any) -> StoredDraft:
    values = {name: getattr(row, name) for name in _NAMES}
    values["access"] = tuple(values["access"] or ())
    return StoredDraft(**values)


class AnswerDrafts:
    """The drafts' repository; `add` keeps one draft per reply (a second ✅ finds it)."""

    def __init__(self, db: Database, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def add(self, draft: NewDraft) -> tuple[StoredDraft, bool]:
        """The draft of that reply, and whether this call created it."""
        values = asdict(draft)
        values.update(access=list(draft.access), created_at=self._clock(), status=PENDING,
                      reviewed_by="", reason="", reask="")
        try:
            with self._db.write() as session:
                session.execute(insert(_drafts), [values])
        except IntegrityError:
            pass  # the same reply captured before (a second ✅, a shortcut after the ✅)
        else:
            found = self.by_reply(draft.platform, draft.channel, draft.message_ref)
            assert found is not None
            return found, True
        found = self.by_reply(draft.platform, draft.channel, draft.message_ref)
        if found is None:
            raise LookupError("answer draft vanished after a conflicting insert")
        return found, False

    def by_reply(self, platform: str, channel: str, message_ref: str) -> StoredDraft | None:
        with self._db.read() as session:
            row = session.execute(select(_drafts).where(
                _drafts.c.platform == platform, _drafts.c.channel == channel,
                _drafts.c.message_ref == message_ref)).first()
        return _stored(row) if row is not None else None

    def get(self, draft_id: int) -> StoredDraft | None:
        with self._db.read() as session:
            row = session.execute(select(_drafts).where(_drafts.c.id == draft_id)).first()
        return _stored(row) if row is not None else None

    def listed(self, status: str = "", limit: int = 200) -> list[StoredDraft]:
        query = select(_drafts).order_by(_drafts.c.id.desc()).limit(limit)
        if status:
            query = query.where(_drafts.c.status == status)
        with self._db.read() as session:
            return [_stored(r) for r in session.execute(query)]

    def approved(self, ids: Sequence[int] | None = None) -> list[StoredDraft]:
        """Approved drafts (all, or those of `ids`): the `answers` source's documents."""
        query = select(_drafts).where(_drafts.c.status == APPROVED).order_by(_drafts.c.id)
        if ids is not None:
            query = query.where(_drafts.c.id.in_(list(ids)))
        with self._db.read() as session:
            return [_stored(r) for r in session.execute(query)]

    def review(self, draft_id: int, status: str, by: str, *, reason: str = "",
               question: str | None = None, answer: str | None = None) -> StoredDraft | None:
        """Approve or reject (optionally with an edit); None when there is no such draft."""
        values: dict[str, Any] = {"status": status, "reviewed_by": by,
                                  "reviewed_at": self._clock(), "reason": reason}
        if question is not None:
            values["question"] = question
        if answer is not None:
            values["answer"] = answer
        return self._update(draft_id, values)

    def _update(self, draft_id: int, values: dict[str, Any]) -> StoredDraft | None:
        with self._db.write() as session:
            result: Any = session.execute(update(_drafts).where(_drafts.c.id == draft_id)
                                          .values(**values))
        return self.get(draft_id) if result.rowcount else None

    def edit(self, draft_id: int, *, question: str, answer: str) -> StoredDraft | None:
        return self._update(draft_id, {"question": question, "answer": answer})

    def set_reask(self, draft_id: int, outcome: str) -> None:
        with self._db.write() as session:
            session.execute(update(_drafts).where(_drafts.c.id == draft_id)
                            .values(reask=outcome))

    def thread_ask(self, platform: str, channel: str, thread: str) -> ThreadAsk | None:
        """The first question Sift recorded in that thread, and whether it went unresolved."""
        first = (select(Interaction.id, Interaction.user_id, Interaction.question,
                        Interaction.status)
                 .where(Interaction.platform == platform, Interaction.channel == channel,
                        Interaction.thread == thread)
                 .order_by(Interaction.id).limit(1))
        with self._db.read() as session:
            row = session.execute(first).first()
            if row is None:
                return None
            down = session.scalar(select(Feedback.id).where(
                Feedback.interaction_id == row.id, Feedback.vote < 0).limit(1))
            called = session.scalar(select(HelpQuestion.id).where(
                HelpQuestion.platform == platform, HelpQuestion.channel == channel,
                HelpQuestion.thread == thread, HelpQuestion.help_requested.is_(True)))
        unresolved = row.status in UNANSWERED_STATUSES or down is not None or \
            called is not None
        return ThreadAsk(row.id, row.user_id, row.question, unresolved)

    def close_gaps(self, draft_id: int, interaction_ids: Sequence[int]) -> None:
        """These gap questions are answered now (the re-ask check asked them again)."""
        if not interaction_ids:
            return
        now = self._clock()
        with self._db.write() as session:
            done = set(session.scalars(select(ClosedGap.interaction_id).where(
                ClosedGap.interaction_id.in_(list(interaction_ids)))))
            rows = [{"interaction_id": i, "draft_id": draft_id, "closed_at": now}
                    for i in dict.fromkeys(interaction_ids) if i not in done]
            if rows:
                session.execute(insert(table(ClosedGap)), rows)

    def gaps(self, since_days: int, limit: int = 500) -> list[GapAsk]:
        """The open gaps of the window, newest first, with where each was asked."""
        down = exists().where(Feedback.interaction_id == Interaction.id, Feedback.vote < 0)
        closed = exists().where(ClosedGap.interaction_id == Interaction.id)
        query = (select(Interaction.id, Interaction.question, Interaction.platform,
                        Interaction.workspace, Interaction.channel, Interaction.user_id)
                 .where(Interaction.created_at >= self._clock() - timedelta(days=since_days),
                        or_(Interaction.status.in_(UNANSWERED_STATUSES), down), ~closed)
                 .order_by(Interaction.id.desc()).limit(limit))
        with self._db.read() as session:
            return [GapAsk(r.id, r.question, r.platform, r.workspace,
                           "" if _private_place(r.platform, r.channel) else r.channel,
                           r.user_id) for r in session.execute(query)]


def _private_place(platform: str, channel: str) -> bool:
    """A Slack DM (D…), a Teams personal chat (a:…), the terminal: one reader."""
    return not channel or platform == "terminal" or channel.startswith(("D", "a:"))
