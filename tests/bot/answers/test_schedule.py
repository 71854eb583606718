"""The answers loop's timetable: the next time a cron names, and a failed run that does not
end the schedule."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.answers.schedule import next_time, on_schedule
from storage.db import Database

MONDAY_0859 = datetime(2026, 11, 30, 8, 59, 30, tzinfo=UTC)


@pytest.mark.parametrize(("cron", "now", "expected"), [
    ("0 9 * * 1", MONDAY_0859, datetime(2026, 11, 30, 9, 0, tzinfo=UTC)),
    ("0 9 * * 1", datetime(2026, 11, 30, 9, 0, tzinfo=UTC), datetime(2026, 12, 7, 9, 0,
                                                                   tzinfo=UTC)),
    ("0 9 * * *", datetime(2026, 12, 2, 17, 0, tzinfo=UTC), datetime(2026, 12, 3, 9, 0,
                                                                   tzinfo=UTC)),
])
def test_the_next_time_is_strictly_after_now(cron: str, now: datetime,
                                             expected: datetime) -> None:
    assert next_time(cron, now) == expected


async def test_a_failed_run_is_logged_and_the_schedule_goes_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    runs: list[int] = []

    async def job() -> None:
        runs.append(len(runs))
        raise RuntimeError("Slack is down")

    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    task = asyncio.create_task(on_schedule("* * * * *", job, "review reminders", db,
                                           at_start=True))
    for _ in range(100):
        if runs:
            break
        await asyncio.sleep(0.01)
    assert not task.done()  # still waiting for the next minute
    task.cancel()
    assert runs == [0]
    assert "review reminders failed; the next scheduled time tries again" in caplog.text
    db.dispose()
