"""Correlation ids: one per question or job, attached to every log line and error message."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import secrets
from collections.abc import Iterator

from rag.spans import current_trace_id

_correlation_id: contextvars.ContextVar[str] = contextvars.ContextVar("correlation_id", default="-")


def new_correlation_id() -> str:
    """Short, unguessable, easy to read aloud from a chat message to an operator; when the
    work is traced, its trace id, so that a reference finds the trace as well as the log."""
    return current_trace_id() or secrets.token_hex(4)


def current_correlation_id() -> str:
    return _correlation_id.get()


def bind_correlation_id(value: str) -> contextvars.Token[str]:
    return _correlation_id.set(value)


def reset_correlation_id(token: contextvars.Token[str]) -> None:
    _correlation_id.reset(token)


@contextlib.contextmanager
def correlated(value: str | None = None) -> Iterator[str]:
    """Bind `value` (a new id when None) as the correlation id for the block; yields it."""
    cid = value or new_correlation_id()
    token = _correlation_id.set(cid)
    try:
        yield cid
    finally:
        _correlation_id.reset(token)


class CorrelationFilter(logging.Filter):
    """Adds `record.correlation_id` so that formats can show it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "correlation_id"):
            bound = _correlation_id.get()
            # Outside a question or a sync (a web request, say), a traced line names its trace.
            record.correlation_id = bound if bound != "-" else current_trace_id() or "-"
        return True
