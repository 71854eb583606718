"""Column types shared by the models: timezone-aware UTC timestamps on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


def utc_now() -> datetime:
    return datetime.now(UTC)


def text_hash(text: str) -> str:
    """What is kept instead of a text when storing text is switched off."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class UTCDateTime(TypeDecorator[datetime]):
    """Stores UTC and always returns aware datetimes.

    SQLite keeps no offset, so values are normalised to UTC before they are written (which
    also keeps its text comparisons correct) and marked UTC when read. A naive value is
    taken to be UTC already.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
