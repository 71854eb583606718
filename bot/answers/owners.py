"""Owners keep documents true: reminded when one is due for review, told of a 👎 on an answer
citing one, and their keep / retire buttons (update is a link to the document's page)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.answers.documents import SOURCE as ANSWERS
from bot.answers.documents import draft_id
from bot.chat.notify import Choice, Notice, Switchboard, split_address
from bot.settings import AnswerSettings, SourceSettings
from storage.answers import AnswerDrafts
from storage.audit import AuditLog
from storage.overrides import OverrideRepository
from storage.reviews import EXPIRED, DocumentReviews, ReviewState

log = logging.getLogger(__name__)

KEEP_ACTION, RETIRE_ACTION = "sift_review_keep", "sift_review_retire"


@dataclass(frozen=True)
class Outcome:
    """What a keep or retire click did, in one sentence for the person who clicked."""

    done: bool
    sentence: str


def _day(when: datetime | None) -> str:
    return f"{when:%-d %b %Y}" if when is not None else "today"


def _choices(r: ReviewState) -> tuple[Choice, ...]:
    value = f"{r.source}\t{r.doc_id}"
    update = (Choice("Update it", url=r.url),) if r.url.startswith(("https://", "http://")) else ()
    return (Choice("Still true: keep", KEEP_ACTION, value), *update,
            Choice("Retire it", RETIRE_ACTION, value))


def reminder(r: ReviewState) -> Notice:
    title = f"**{r.title}** ({r.source})"
    if r.state == EXPIRED:
        when = f"was due for review on {_day(r.review_by)}" if r.review_by else \
            "has never been reviewed"
        text = (f"{title} {when}. Sift still uses it, and says under each answer citing it "
                "that it may be out of date. Is it still true?")
    else:
        text = (f"{title} is due for review by {_day(r.review_by)}. After that, answers "
                "citing it will say it may be out of date. Is it still true?")
    return Notice(text + " Updating it at its source verifies it too.", _choices(r))


def voted_down(r: ReviewState) -> Notice:
    # The question is not repeated: it may come from a channel the owner is not in.
    return Notice(f"Someone marked an answer citing **{r.title}** ({r.source}) as not helpful. "
                  "If the document is out of date, update it at its source; if it is still "
                  "true, say so.", _choices(r))


def review_intervals(sources: Sequence[SourceSettings], answers: AnswerSettings
                     ) -> dict[str, int]:
    """Review days per source: each [[sources]] `review_days`, and [answers] review_days for
    the approved answers; a source without one is never due."""
    days = {s.name: s.review_days for s in sources if s.review_days is not None}
    if answers.review_days is not None:
        days[ANSWERS] = answers.review_days
    return days


class Owners:
    """`owners`: the owner's address per source (sift.toml's `owner`); an approved answer's
    owner is its author. Blocking storage calls run in a thread."""

    def __init__(self, reviews: DocumentReviews, owners: Mapping[str, str],
                 authors: AnswerDrafts, hiding: OverrideRepository, audit: AuditLog,
                 switchboard: Switchboard) -> None:
        self._reviews = reviews
        self._owners = {k: v for k, v in owners.items() if v}
        self._authors = authors
        self._hiding = hiding
        self._audit = audit
        self.switchboard = switchboard

    def owner_of(self, source: str, doc_id: str) -> str:
        """The owner's address ("U0…" for Slack, "teams:…"), or "" when nobody owns it."""
        if source == ANSWERS:
            number = draft_id(doc_id)
            draft = self._authors.get(number) if number is not None else None
            if draft is None or not draft.author:
                return ""
            return draft.author if draft.platform == "slack" else \
                f"{draft.platform}:{draft.author}"
        return self._owners.get(source, "")

    async def remind(self) -> int:
        """Tell each owner of the documents due or expired that nobody was told of yet;
        returns how many reminders went out. A reminder that fails is tried next time."""
        due = await asyncio.to_thread(self._reviews.to_remind)
        sent = 0
        for r in due:
            owner = self.owner_of(r.source, r.doc_id)
            if not owner:
                continue
            try:
                delivered = await self.switchboard.send(owner, reminder(r))
            except Exception:
                log.exception("could not remind %s of %s/%s", owner, r.source, r.doc_id)
                continue
            if delivered:
                await asyncio.to_thread(self._reviews.reminded, r.source, r.doc_id)
                sent += 1
        if sent:
            log.info("review reminders: %d sent to owners", sent)
        return sent

    async def voted_down(self, doc_ids: Sequence[str]) -> int:
        """A 👎 on an answer written from these documents: each owner hears it once."""
        states = await asyncio.to_thread(self._reviews.states_of, doc_ids)
        told = 0
        for r in states:
            owner = self.owner_of(r.source, r.doc_id)
            if owner:
                try:
                    told += await self.switchboard.send(owner, voted_down(r))
                except Exception:
                    log.exception("could not tell %s of a 👎 on %s", owner, r.doc_id)
        return told

    async def keep(self, platform: str, user: str, value: str) -> Outcome:
        found = await self._own(platform, user, value)
        if isinstance(found, Outcome):
            return found
        await asyncio.to_thread(self._reviews.keep, found.source, found.doc_id,
                                _actor(platform, user))
        await asyncio.to_thread(self._audit.record, _actor(platform, user),
                                "document_verified", f"{found.source}:{found.doc_id}")
        [now] = await asyncio.to_thread(self._reviews.states_of, [found.doc_id])
        until = f" until {_day(now.review_by)}" if now.review_by else ""
        return Outcome(True, f"Kept: **{found.title}** is verified{until}. Thank you.")

    async def retire(self, platform: str, user: str, value: str) -> Outcome:
        found = await self._own(platform, user, value)
        if isinstance(found, Outcome):
            return found
        actor = _actor(platform, user)
        await asyncio.to_thread(self._hiding.set, found.doc_id, "hide",
                                note="retired by its owner", set_by=actor)
        await asyncio.to_thread(self._audit.record, actor, "document_retired",
                                f"{found.source}:{found.doc_id}")
        return Outcome(True, f"Retired: Sift no longer answers from **{found.title}**. An admin "
                       "can bring it back on the console's Documents page.")

    async def _own(self, platform: str, user: str, value: str) -> ReviewState | Outcome:
        """The document a button names, when the person who clicked owns it: the button was
        only offered to its owner, and a click can be forged."""
        source, _, doc_id = value.partition("\t")
        states = await asyncio.to_thread(self._reviews.states_of, [doc_id]) if doc_id else []
        found = next((r for r in states if r.source == source), None)
        owner = self.owner_of(source, doc_id) if found is not None else ""
        if found is None or not owner or split_address(owner) != (platform, user):
            return Outcome(False, "Only the owner of that document can confirm or retire it.")
        return found


def _actor(platform: str, user: str) -> str:
    return f"{platform}:{user}"
