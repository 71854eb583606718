"""Retry-After parsing: delta-seconds, HTTP dates in the past and future, garbage."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rag.http_retry import retry_after

NOW = datetime(2026, 11, 22, 9, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("value", "expected"), [
    ("3", 3.0),
    ("0.5", 0.5),
    ("-2", 0.0),
    ("Sun, 22 Nov 2026 09:00:07 GMT", 7.0),
    ("Sun, 22 Nov 2026 08:59:00 GMT", 0.0),
    ("soon", None),
    ("", None),
    (None, None),
])
def test_retry_after(value: str | None, expected: float | None) -> None:
    assert retry_after(value, NOW) == expected


def test_a_date_without_now_is_measured_from_the_clock() -> None:
    assert retry_after("Thu, 01 Jan 2026 00:00:10 GMT") == 0.0  # long past
    assert (retry_after("Fri, 01 Jan 2100 00:00:00 GMT") or 0) > 0
