"""The console's Answers page: captured drafts with their thread, approved (optionally after
an edit) or rejected with a reason; admins act, viewers read what is not restricted."""

from __future__ import annotations

import asyncio

from aiohttp import web

from bot.admin.console import KEY, PREFIX, SESSION, render, require_admin, sees_restricted
from bot.answers.review import AnswerReview
from bot.proxy import client_of
from rag.errors import SiftError
from storage.answers import PENDING, STATUSES, AnswerDrafts, StoredDraft

REVIEW = web.AppKey("answer_review", AnswerReview)  # set by `sift serve` (bot/server.py)


def _drafts(request: web.Request) -> AnswerDrafts:
    return AnswerDrafts(request.app[KEY].db)


def _readable(request: web.Request, draft: StoredDraft) -> bool:
    """A viewer reads only what a public channel said; admins read every draft."""
    return sees_restricted(request) or tuple(draft.access) == ("public",)


async def answers_page(request: web.Request) -> web.StreamResponse:
    status = request.query.get("status", PENDING)
    status = status if status in STATUSES else PENDING
    drafts = await asyncio.to_thread(_drafts(request).listed, status)
    return render(request, "answers.html", drafts=drafts, shown=status, statuses=STATUSES,
                  readable={d.id: _readable(request, d) for d in drafts},
                  done=request.query.get("done", ""), done_id=request.query.get("id", ""))


def _draft_id(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isdigit():
        raise web.HTTPNotFound(text="There is no such answer draft.")
    return int(raw)


async def answer_page(request: web.Request, *, error: str = "", status: int = 200,
                      values: dict[str, str] | None = None) -> web.StreamResponse:
    draft = await asyncio.to_thread(_drafts(request).get, _draft_id(request))
    if draft is None:
        return render(request, "message.html", 404, title="No such answer",
                      message="There is no such answer draft.")
    return render(request, "answer.html", status, draft=draft,
                  readable=_readable(request, draft), error=error,
                  values=values or {"question": draft.question, "answer": draft.answer})


def _review(request: web.Request) -> AnswerReview:
    require_admin(request)
    review = request.app.get(REVIEW)
    if review is None:
        raise web.HTTPServiceUnavailable(text="Answer review needs `sift serve`'s index.")
    return review


def _who(request: web.Request) -> tuple[str, str]:
    session = request[SESSION]
    return session.email or session.role, client_of(request).address


async def approve(request: web.Request) -> web.StreamResponse:
    """Approve as shown in the form (an edited question or answer goes in with it)."""
    review = _review(request)
    form = await request.post()
    values = {k: str(form.get(k, "")) for k in ("question", "answer")}
    actor, address = _who(request)
    try:
        await review.approve(_draft_id(request), actor, address=address,
                             question=values["question"], answer=values["answer"])
    except SiftError as exc:
        return await answer_page(request, error=exc.user_message, status=400, values=values)
    raise web.HTTPSeeOther(f"{PREFIX}/answers?done=approved&id={_draft_id(request)}")


async def reject(request: web.Request) -> web.StreamResponse:
    review = _review(request)
    form = await request.post()
    actor, address = _who(request)
    try:
        await review.reject(_draft_id(request), actor, str(form.get("reason", "")),
                            address=address)
    except SiftError as exc:
        return await answer_page(request, error=exc.user_message, status=400)
    raise web.HTTPSeeOther(f"{PREFIX}/answers?done=rejected&id={_draft_id(request)}")


def add_routes(sub: web.Application) -> None:
    sub.router.add_get("/answers", answers_page)
    sub.router.add_get("/answers/{id}", _show)
    sub.router.add_post("/answers/{id}/approve", approve)
    sub.router.add_post("/answers/{id}/reject", reject)


async def _show(request: web.Request) -> web.StreamResponse:
    return await answer_page(request)


