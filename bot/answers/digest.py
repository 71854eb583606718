"""The weekly digest for the knowledge team: new gaps by topic, answers waiting for review,
the most 👎'd answers, documents past their review date, and the week's deflection."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.admin.gaps import group_questions
from bot.chat.deflection import ArmFigures, by_arm
from bot.chat.notify import Notice, Switchboard
from rag.ports import Embedder
from storage.answers import PENDING, AnswerDrafts
from storage.columns import utc_now
from storage.console_docs import gap_questions, most_voted_down
from storage.db import Database
from storage.outcomes import HelpOutcomes
from storage.reviews import EXPIRED, DocumentReviews, ReviewState

log = logging.getLogger(__name__)

WEEK = timedelta(days=7)
TOPICS, LISTED = 5, 5  # lines per section: a digest is read in a minute


@dataclass(frozen=True)
class Topic:
    question: str  # the group's newest question, standing for the rest
    asked: int


@dataclass(frozen=True)
class Digest:
    since: datetime
    until: datetime
    topics: list[Topic]
    gaps: int
    pending: int
    voted_down: list[tuple[str, int]]
    expired: list[ReviewState]
    deflection: list[ArmFigures]

    def text(self) -> str:
        return "\n\n".join(part for part in (
            f"**Sift's week** ({self.since:%-d %b} – {self.until:%-d %b %Y})",
            _section("New gaps", f"{self.gaps} question(s) went unanswered or got a 👎",
                     [f"{t.question} ({t.asked}×)" for t in self.topics]),
            f"**Answers waiting for review**: {self.pending}"
            + (" (console → Answers, or `sift answers list`)" if self.pending else ""),
            _section("Most 👎'd answers", f"{len(self.voted_down)} answer(s)",
                     [f"{q} ({n} 👎)" for q, n in self.voted_down]),
            _section("Documents past their review date", f"{len(self.expired)} document(s)",
                     [f"{r.title} ({r.source})" for r in self.expired[:LISTED]]),
            _deflection(self.deflection)) if part)


def _section(title: str, count: str, lines: Sequence[str]) -> str:
    if not lines:
        return f"**{title}**: none"
    return f"**{title}**: {count}\n" + "\n".join(f"- {_short(line)}" for line in lines)


def _short(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _deflection(arms: Sequence[ArmFigures]) -> str:
    asked = [a for a in arms if a.questions]
    if not asked:
        return "**Help channels**: no question this week"
    names = {"sift": "with Sift", "holdout": "without Sift (the holdout)"}
    parts = [f"{names.get(a.arm, a.arm)}: {a.resolution_rate:.0%} of {a.questions} resolved "
             f"(95% CI {a.ci_low:.0%}–{a.ci_high:.0%})" for a in asked]
    return "**Help channels**: " + "; ".join(parts)


async def gather(db: Database, embedder: Embedder, reviews: DocumentReviews,
                 drafts: AnswerDrafts, clock: Callable[[], datetime] = utc_now) -> Digest:
    """The week up to now. Gap questions are grouped by meaning as the console's Gaps page
    groups them (embedded here: the digest may run where the page's indexer does not)."""
    until = clock()
    since = until - WEEK
    questions = await asyncio.to_thread(gap_questions, db, since)
    groups = []
    if questions:
        vectors = await embedder.embed_documents([q.question for q in questions])
        groups = group_questions(questions, vectors)
    pending = len(await asyncio.to_thread(drafts.listed, PENDING))
    down = await asyncio.to_thread(most_voted_down, db, since, LISTED)
    expired = await asyncio.to_thread(reviews.states, None, EXPIRED)
    asked = await asyncio.to_thread(HelpOutcomes(db).since, since)
    topics = [Topic(g.questions[0].question, len(g.questions)) for g in groups[:TOPICS]]
    return Digest(since, until, topics, len(questions), pending, down, expired,
                  by_arm(asked, until))


async def post(digest: Digest, to: str, switchboard: Switchboard) -> bool:
    """Sent to `to` ([answers] digest_to); False (and a warning) when it could not be."""
    sent = await switchboard.send(to, Notice(digest.text()))
    if not sent:
        log.warning("the weekly digest could not be posted to %s", to)
    return sent
