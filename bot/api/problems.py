"""Errors of the HTTP API as application/problem+json (RFC 9457): one sentence in `detail`."""

from __future__ import annotations

from http import HTTPStatus

from aiohttp import web
from pydantic import ValidationError

from bot.api.models import Problem

PROBLEM_TYPE = "application/problem+json"


def problem(status: int, detail: str, *, reference: str = "",
            headers: dict[str, str] | None = None) -> web.Response:
    body = Problem(title=HTTPStatus(status).phrase, status=status, detail=detail,
                   reference=reference)
    return web.Response(status=status, text=body.model_dump_json(), content_type=PROBLEM_TYPE,
                        headers=headers)


def invalid_input(exc: ValidationError) -> str:
    """The first thing wrong with a request body, as one sentence naming the field."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "the body"
    if first["type"] == "extra_forbidden":
        return f"The request has a field {where!r} that this API does not take."
    if first["type"] == "missing":
        return f"The request needs the field {where!r}."
    return f"The field {where!r} is not valid: {first['msg'].rstrip('.')}."
