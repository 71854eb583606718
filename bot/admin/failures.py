"""The console's pages when the disk is full or the database unreachable: one sentence, 503."""

from __future__ import annotations

import logging

from aiohttp import web

from bot.admin.console import HEADERS, Handler, render
from bot.faults import operator_sentence
from rag import messages
from rag.logcontext import correlated

log = logging.getLogger(__name__)


@web.middleware
async def failures(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Outermost: a sign-in or a page that cannot be saved or read for a full disk or an
    absent database says so (and is worth retrying, hence 503), instead of a bare 500."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except Exception as exc:
        sentence = operator_sentence(exc)
        if sentence is None:
            raise
        with correlated() as cid:
            log.error("console: %s %s failed: %s", request.method, request.path, sentence,
                      exc_info=exc)
        response = render(request, "message.html", 503, title="Sift cannot save this now",
                          message=messages.with_reference(sentence, cid))
        response.headers.update(HEADERS)
        return response
