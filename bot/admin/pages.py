"""The reading pages: questions (list and one in full) and document health."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from aiohttp import web

from bot.admin.console import KEY, PREFIX, Console, audit, render, require_admin, sees_restricted
from bot.answers.owners import review_intervals
from bot.prices import cost
from storage.console_docs import DOC_VIEWS, DocHealth, documents, restricted_ids
from storage.console_overview import STATUSES
from storage.console_questions import (
    VOTES,
    QuestionFilter,
    channels,
    list_questions,
    question_detail,
)
from storage.overrides import OverrideRepository
from storage.reviews import STATES as REVIEW_STATES
from storage.reviews import DocumentReviews

PAGE = 50
REVIEW_ROWS = 200  # soonest due first: what needs an owner now is at the top
RESTRICTED = "(restricted)"


def _day(value: str, field: str, errors: dict[str, str]) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        errors[field] = "Use a date such as 2026-11-24."
        return None


# The database's integers are 64-bit: a longer number in a link is a bad link, not a 500.
_MAX_DIGITS = 18


def _int(value: str | None) -> int | None:
    """A non-negative number written in ASCII digits; None for anything else."""
    if not value or not value.isascii() or not value.isdigit() or len(value) > _MAX_DIGITS:
        return None
    return int(value)


def question_filter(query: dict[str, str], errors: dict[str, str]) -> QuestionFilter:
    """The list's filters from the query string; a bad value is named in `errors`."""
    status = query.get("status", "")
    vote = query.get("vote", "")
    if status and status not in STATUSES:
        errors["status"] = "Choose one of the listed outcomes."
        status = ""
    if vote and vote not in VOTES:
        errors["vote"] = "Choose one of the listed votes."
        vote = ""
    until = _day(query.get("until", ""), "until", errors)
    return QuestionFilter(text=query.get("q", "").strip()[:200], status=status,
                          platform=query.get("platform", ""), channel=query.get("channel", ""),
                          vote=vote, doc_id=query.get("doc", ""),
                          since=_day(query.get("since", ""), "since", errors),
                          until=until + timedelta(days=1) if until else None)


async def questions_page(request: web.Request) -> web.StreamResponse:
    console = request.app[KEY]
    errors: dict[str, str] = {}
    query = dict(request.query)
    f = question_filter(query, errors)
    if not sees_restricted(request):
        f = replace(f, restricted_answers=False)
        if f.doc_id and f.doc_id in await asyncio.to_thread(restricted_ids, console.db,
                                                            [f.doc_id]):
            f = replace(f, doc_id=RESTRICTED)  # matches no document: its questions stay hidden
    before = _int(query.get("before"))
    page = await asyncio.to_thread(list_questions, console.db, f, before=before, limit=PAGE)
    names = await asyncio.to_thread(channels, console.db)
    keep = {k: v for k, v in query.items() if k != "before" and v}
    return render(request, "questions.html", 400 if errors else 200, page=page, f=f,
                  query=query, keep=keep, errors=errors, statuses=STATUSES, votes=VOTES,
                  channels=names)


async def question_page(request: web.Request) -> web.StreamResponse:
    console = request.app[KEY]
    interaction_id = _int(request.match_info["id"])
    detail = None if interaction_id is None else \
        await asyncio.to_thread(question_detail, console.db, interaction_id)
    if detail is None:
        return render(request, "message.html", 404, title="Not found",
                      message="There is no question with that number.")
    hidden = set() if sees_restricted(request) else await asyncio.to_thread(
        restricted_ids, console.db, [s.doc_id for s in detail.sources])
    # An answer written from a restricted document is as restricted as its citations: its
    # text (and the votes' comments on it) could repeat that document.
    masked = any(s.doc_id in hidden for s in detail.sources if s.selected or s.cited)
    i = detail.interaction
    costs = {stage: cost(i.models.get(stage, ""), _prompt(u), int(u.get("output_tokens") or 0),
                         console.admin.prices) for stage, u in (i.usage or {}).items()}
    return render(request, "question.html", d=detail, i=i, hidden=hidden, masked=masked,
                  costs=costs)


def _prompt(usage: dict[str, int]) -> int:
    """Every prompt token, cached or not (the prices are list prices per token)."""
    return sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_read_tokens",
                                                 "cache_write_tokens"))


def document_reviews(console: Console) -> DocumentReviews:
    settings = console.settings
    return DocumentReviews(console.db, review_intervals(settings.resolved_sources,
                                                        settings.answers))


async def _reviews_view(request: web.Request) -> web.StreamResponse:
    """Document health: which documents are verified, due for their owner's review, expired."""
    console = request.app[KEY]
    reviews = document_reviews(console)
    states = await asyncio.to_thread(reviews.states)
    counts = {state: sum(r.state == state for r in states) for state in REVIEW_STATES}
    if not sees_restricted(request):
        states = [replace(r, doc_id=RESTRICTED, title=RESTRICTED, url="") if r.restricted
                  else r for r in states]
    return render(request, "documents.html", view="review", views=(*DOC_VIEWS, "review"),
                  reviews=states[:REVIEW_ROWS], counts=counts, tracked=reviews.tracked,
                  more=len(states) > REVIEW_ROWS, q="", done=request.query.get("kept", "")[:200]
                  and f"{request.query['kept'][:200]}: verified.")


async def verify_document(request: web.Request) -> web.StreamResponse:
    """An admin's word that a document is still true (as its owner's keep button)."""
    require_admin(request)
    form = await request.post()
    source, doc_id = str(form.get("source", "")), str(form.get("doc_id", ""))
    reviews = document_reviews(request.app[KEY])
    known = await asyncio.to_thread(reviews.states, [doc_id]) if doc_id else []
    if not any(r.source == source for r in known):
        raise web.HTTPBadRequest(text=f"Source '{source}' has no reviewed document "
                                 f"'{doc_id}'.")
    await asyncio.to_thread(reviews.keep, source, doc_id, "console")
    await audit(request, "document_verified", f"{source}:{doc_id}")
    raise web.HTTPSeeOther(f"{PREFIX}/documents?{urlencode({'view': 'review', 'kept': doc_id})}")


async def documents_page(request: web.Request) -> web.StreamResponse:
    console = request.app[KEY]
    view = request.query.get("view", "low")
    if view == "review":
        return await _reviews_view(request)
    if view not in DOC_VIEWS:
        view = "low"
    offset = _int(request.query.get("offset")) or 0
    text = request.query.get("q", "").strip()[:200]
    rows = await asyncio.to_thread(
        documents, console.db, view, threshold=console.settings.storage.relevant_threshold,
        text=text, offset=offset, limit=PAGE + 1)
    overrides = await asyncio.to_thread(OverrideRepository(console.db).for_documents,
                                        [d.doc_id for d in rows[:PAGE]])
    if not sees_restricted(request):
        rows = [_masked(d) if d.restricted else d for d in rows]
    return render(request, "documents.html", view=view, views=DOC_VIEWS, rows=rows[:PAGE],
                  more=len(rows) > PAGE, offset=offset, page=PAGE, q=text,
                  threshold=console.settings.storage.relevant_threshold,
                  overrides={doc: o.kind for doc, o in overrides.items()},
                  done=_override_done(request))


# What the confirmation after an override says was done ("reset" included).
_DONE = {"pin": "pinned", "boost": "boosted", "demote": "demoted", "hide": "hidden",
         "reset": "reset to what its history says"}


def _override_done(request: web.Request) -> str:
    """The confirmation of the override just set (the form redirects back with it)."""
    kind, doc = request.query.get("set", ""), request.query.get("doc", "")[:200]
    return f"{doc}: {_DONE[kind]}." if kind in _DONE and doc else ""


def _masked(d: DocHealth) -> DocHealth:
    return replace(d, doc_id=RESTRICTED, title=RESTRICTED, url="")
