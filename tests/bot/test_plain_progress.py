"""Plain progress lines: throttled, cumulative, and a last line when the work ends."""

from __future__ import annotations

import io

from bot.cli.plain_progress import PlainProgress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_prints_at_most_every_interval_and_once_at_the_end() -> None:
    out, clock = io.StringIO(), Clock()
    with PlainProgress(out, every_s=30, clock=clock) as progress:
        docs = progress.add_task("indexing", total=2757, detail="")
        for _ in range(10):  # ten updates inside one interval: silent
            progress.advance(docs, 100)
        assert out.getvalue() == ""
        clock.now += 95
        progress.update(docs, detail="10400 chunks")
        progress.advance(docs, 57)
        clock.now += 31
        questions = progress.add_task("questions", total=40)
        progress.advance(questions, 3)
    assert out.getvalue().splitlines() == [
        "[1m35s] indexing 1000/2757 (10400 chunks)",
        "[2m06s] indexing 1057/2757 (10400 chunks); questions 3/40",
    ]


def test_the_last_state_is_printed_when_the_work_ends() -> None:
    out, clock = io.StringIO(), Clock()
    with PlainProgress(out, every_s=30, clock=clock) as progress:
        task = progress.add_task("questions", total=40)
        clock.now += 40
        progress.advance(task, 39)
        clock.now += 5
        progress.advance(task)
    assert out.getvalue().splitlines() == ["[0m40s] questions 39/40", "[0m45s] questions 40/40"]


def test_unknown_totals_print_counts_only() -> None:
    out, clock = io.StringIO(), Clock()
    with PlainProgress(out, every_s=30, clock=clock) as progress:
        task = progress.add_task("kb: documents", total=None)
        progress.advance(task, 12)
    assert out.getvalue() == "[0m00s] kb: documents 12\n"


def test_nothing_to_report_prints_nothing() -> None:
    out = io.StringIO()
    with PlainProgress(out):
        pass
    assert out.getvalue() == ""
