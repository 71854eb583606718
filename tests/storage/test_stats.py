"""Pure report aggregations: percentiles, grouping of questions, per-mode comparison."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storage.stats import (
    ChannelStats,
    InteractionRow,
    channel_stats,
    content_gaps,
    mode_stats,
    most_downvoted,
    normalise,
    percentile,
    stage_latencies,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([], 0.5, None),
    ([5.0], 0.95, 5.0),
    ([1, 2, 3, 4], 0.5, 2.5),
    ([1, 2, 3, 4, 5], 0.95, 4.8),
    ([3, 1, 2], 0.0, 1.0),
    ([3, 1, 2], 1.0, 3.0),
    ([10, 20], 0.25, 12.5),
    ([7, 7, 7], 0.5, 7.0),
])
def test_percentile(values: list[float], q: float, expected: float | None) -> None:
    assert percentile(values, q) == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize("q", [-0.1, 1.5])
def test_percentile_rejects_bad_quantiles(q: float) -> None:
    with pytest.raises(ValueError, match="quantile"):
        percentile([1.0], q)


@pytest.mark.parametrize(("text", "expected"), [
    ("How do I reset MFA?", "how do i reset mfa"),
    ("  how   do I reset mfa ?! ", "how do i reset mfa"),
    ("VPN.", "vpn"),
    ("", ""),
])
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def _row(i: int, question: str, status: str = "answered", mode: str = "accurate",
         up: int = 0, down: int = 0, arm: str = "", **timings: float) -> InteractionRow:
    return InteractionRow(i, question, status, mode, timings, T0 + timedelta(minutes=i), up,
                          down, arm)


def test_stage_latencies_in_pipeline_order_then_unknown_stages() -> None:
    rows = [_row(1, "a", total=100, retrieve=10, zeta=1), _row(2, "b", total=300, grade=50)]
    assert [(s.stage, s.count, s.p50_ms, s.p95_ms) for s in stage_latencies(rows)] == [
        ("retrieve", 1, 10, 10), ("grade", 1, 50, 50), ("total", 2, 200, 290),
        ("zeta", 1, 1, 1)]


def test_downvoted_groups_the_same_question_and_shows_the_latest_wording() -> None:
    rows = [_row(1, "Reset MFA?", up=2, down=1), _row(2, "reset mfa", down=1),
            _row(3, "VPN", down=2), _row(4, "Wifi", up=3), _row(5, "Printer", down=2, up=1)]
    found = [(q.question, q.down, q.up, q.asked) for q in most_downvoted(rows, 10)]
    # Ties on thumbs-down: fewer thumbs-up first (the more clearly unhelpful answer).
    assert found == [("VPN", 2, 0, 1), ("Printer", 2, 1, 1), ("reset mfa", 2, 2, 2)]
    assert len(most_downvoted(rows, 1)) == 1


def test_content_gaps_are_unanswered_questions_most_asked_first() -> None:
    rows = [_row(1, "Parking?", "no_answer"), _row(2, "parking", "no_answer"),
            _row(3, "Gym", "no_answer"), _row(4, "Parking", "answered")]
    assert [(g.question, g.asked, g.last_asked) for g in content_gaps(rows, 10)] == [
        ("parking", 2, T0 + timedelta(minutes=2)), ("Gym", 1, T0 + timedelta(minutes=3))]


def test_mode_stats() -> None:
    rows = [_row(1, "a", up=1, total=100), _row(2, "b", "no_answer", down=1, total=300),
            _row(3, "c", mode="fast", total=50), _row(4, "d", "no_answer", "fast")]
    found = {m.mode: (m.count, m.thumbs_up_rate, m.no_answer_rate, m.p50_ms)
             for m in mode_stats(rows)}
    assert found == {"accurate": (2, 0.5, 0.5, 200.0), "fast": (2, None, 0.5, 50.0)}


def test_while_a_split_runs_only_its_questions_compare_the_arms() -> None:
    rows = [_row(1, "a", up=1, arm="accurate", total=100),
            _row(2, "b", mode="fast", down=1, arm="fast", total=40),
            _row(3, "c", mode="fast", up=1, total=10)]  # `--mode fast` by hand: not an arm
    found = {m.mode: (m.count, m.thumbs_up_rate, m.p50_ms) for m in mode_stats(rows)}
    assert found == {"accurate": (1, 1.0, 100.0), "fast": (1, 0.0, 40.0)}


def test_channel_stats_count_per_conversation_busiest_first() -> None:
    def row(n: int, channel: str, status: str, up: int = 0, down: int = 0) -> InteractionRow:
        return InteractionRow(n, f"q{n}", status, "fast", {}, T0, up, down, channel=channel)

    rows = [row(1, "slack:C1", "answered", up=1), row(2, "slack:C1", "no_answer"),
            row(3, "slack:C1", "degraded", down=1), row(4, "teams:19:x", "answered", up=1),
            row(5, "terminal", "error")]
    assert channel_stats(rows, 2) == [ChannelStats("slack:C1", 3, 2, 1, 1, 1),
                                      ChannelStats("teams:19:x", 1, 1, 0, 1, 0)]
    assert channel_stats(rows, 10)[0].thumbs_up_rate == 0.5
