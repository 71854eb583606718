"""Grade parsing: valid JSON, clamping, malformed output, batch replies with gaps."""

from __future__ import annotations

import pytest

from rag.grade import GradeParseError, parse_batch, parse_grade


@pytest.mark.parametrize(("text", "expected"), [
    ('{"score": 0.8, "reason": "Covers the steps."}', (0.8, "Covers the steps.")),
    ('{"score": 1, "reason": "Exact."}', (1.0, "Exact.")),
    ('{"score": 1.7, "reason": "Too high."}', (1.0, "Too high.")),
    ('{"score": -0.2, "reason": "Too low."}', (0.0, "Too low.")),
    ('{"score": 0.5, "reason": "  spaced\\n out  "}', (0.5, "spaced out")),
])
def test_parse_grade(text: str, expected: tuple[float, str]) -> None:
    assert parse_grade(text) == expected


@pytest.mark.parametrize("text", [
    "not json", '{"score": "high", "reason": "x"}', '{"score": 0.5}', '{"reason": "x"}',
    '{"score": true, "reason": "x"}', '{"score": 0.5, "reason": ""}', "[0.5]",
    '{"score": NaN, "reason": "x"}',
])
def test_parse_grade_rejects(text: str) -> None:
    with pytest.raises(GradeParseError):
        parse_grade(text)


def test_parse_batch_keeps_known_ids_and_skips_bad_entries() -> None:
    text = ('{"grades": [{"id": "c1", "score": 0.9, "reason": "Yes."},'
            ' {"id": "c9", "score": 0.1, "reason": "Unknown id."},'
            ' {"id": "c2", "score": "x", "reason": "Bad score."},'
            ' {"id": "c1", "score": 0.1, "reason": "Duplicate ignored."}]}')
    assert parse_batch(text, ["c1", "c2", "c3"]) == {"c1": (0.9, "Yes.")}


@pytest.mark.parametrize("text", ["{}", '{"grades": 3}', "oops"])
def test_parse_batch_rejects(text: str) -> None:
    with pytest.raises(GradeParseError):
        parse_batch(text, ["c1"])
