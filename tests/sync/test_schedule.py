"""The sync schedule: job layout, the start-up pass, error containment and a clean stop."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from rag.errors import ConfigError
from sync.connectors.folder import FolderConnector
from sync.lock import SourceLock
from sync.runner import SyncRunner, SyncSource
from sync.schedule import SourceSchedule, SyncScheduler, crontab, scheduled_sync
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder, write


class BlockingEmbedder(HashEmbedder):
    """Never returns until cancelled: a sync that is running when the bot stops."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()

    async def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        self.entered.set()
        await asyncio.Event().wait()


def make_runner(kb: Path, tmp_path: Path, embedder: HashEmbedder | None = None,
                state: MemorySyncState | None = None) -> SyncRunner:
    return SyncRunner([SyncSource("kb", FolderConnector(kb))], MemoryIndex(),
                      embedder or HashEmbedder(), state or MemorySyncState(), tmp_path / "locks")


def test_jobs_per_source(kb: Path, tmp_path: Path) -> None:
    schedules = [SourceSchedule("kb", interval_minutes=15, full_cron="0 3 * * *"),
                 SourceSchedule("wiki", cron="*/5 * * * *", full_cron="")]
    scheduler = SyncScheduler(make_runner(kb, tmp_path), schedules, misfire_grace_s=300)
    jobs = {job.id: job for job in scheduler.scheduler.get_jobs()}
    assert set(jobs) == {"sync:kb", "sync-full:kb", "sync-start:kb", "sync:wiki",
                         "sync-start:wiki"}
    assert isinstance(jobs["sync:kb"].trigger, IntervalTrigger)
    assert jobs["sync:kb"].trigger.interval.total_seconds() == 900
    assert isinstance(jobs["sync-full:kb"].trigger, CronTrigger)
    assert str(jobs["sync:wiki"].trigger.fields[6]) == "*/5"  # minute
    for job in jobs.values():
        assert (job.max_instances, job.coalesce, job.misfire_grace_time) == (1, True, 300)
    assert jobs["sync-full:kb"].args[1] is True and jobs["sync:kb"].args[1] is False


def test_a_bad_cron_is_a_config_error(kb: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        SyncScheduler(make_runner(kb, tmp_path), [SourceSchedule("kb", cron="every day")])
    assert "'every day' of source 'kb'" in caught.value.user_message


async def test_start_up_pass_runs_in_the_background(kb: Path, tmp_path: Path) -> None:
    write(kb, "a.md", "# A\n\nText.")
    state = MemorySyncState()
    scheduler = SyncScheduler(make_runner(kb, tmp_path, state=state),
                              [SourceSchedule("kb")])
    scheduler.start()
    try:
        for _ in range(100):
            if state.runs and state.runs[-1].status == "ok":
                break
            await asyncio.sleep(0.05)
        assert [(r.full, r.status) for r in state.runs] == [(True, "ok")]
    finally:
        await scheduler.stop()


async def test_stop_cancels_a_running_sync_and_records_it(
        kb: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    write(kb, "a.md", "# A\n\nText.")
    state, embedder = MemorySyncState(), BlockingEmbedder()
    scheduler = SyncScheduler(make_runner(kb, tmp_path, embedder, state),
                              [SourceSchedule("kb")])
    scheduler.start()
    await asyncio.wait_for(embedder.entered.wait(), 5)
    await scheduler.stop()
    assert [r.status for r in state.runs] == ["failed"]
    with SourceLock(tmp_path / "locks", "kb"):  # released
        pass
    # A shutdown is said once, as what it is, with no traceback logged as an error.
    assert "sync kb stopped because Sift is shutting down" in caplog.text
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_scheduled_failures_are_logged_not_raised(kb: Path, tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    runner = make_runner(tmp_path / "missing", tmp_path)
    await scheduled_sync(runner, "kb", True)
    assert "full sync of kb failed" in caplog.text and "does not exist" in caplog.text
    write(kb, "a.md", "# A")
    with SourceLock(tmp_path / "locks", "kb"):
        await scheduled_sync(make_runner(kb, tmp_path), "kb", False)
    assert "incremental sync of kb skipped: Another sync of 'kb' is running" in caplog.text


def test_interval_ticks_are_the_same_instants_in_every_replica(kb: Path,
                                                               tmp_path: Path) -> None:
    """Replicas started minutes apart still tick together (ticks count from a fixed epoch)."""
    from datetime import UTC, datetime, timedelta

    from sync.schedule import last_due

    [first, later] = [SyncScheduler(make_runner(kb, tmp_path / n),
                                    [SourceSchedule("kb", interval_minutes=15)])
                      for n in ("a", "b")]
    triggers = [s.scheduler.get_job("sync:kb").trigger for s in (first, later)]
    now = datetime(2026, 5, 4, 10, 7, 30, tzinfo=UTC)
    ticks = [t.get_next_fire_time(None, now + timedelta(minutes=m))
             for t, m in zip(triggers, (0, 4), strict=True)]
    assert ticks[0] == ticks[1] == datetime(2026, 5, 4, 10, 15, tzinfo=UTC)
    assert last_due(triggers[0], now, 600) == datetime(2026, 5, 4, 10, 0, tzinfo=UTC)
    assert last_due(triggers[0], now, 301) is None  # 10:00 is older than the misfire grace
    cron = CronTrigger.from_crontab("*/5 * * * *", timezone=UTC)
    assert last_due(cron, now, 301) == datetime(2026, 5, 4, 10, 5, tzinfo=UTC)


async def test_a_tick_another_replica_already_ran_is_skipped(kb: Path,
                                                             tmp_path: Path) -> None:
    """Runs for the same tick from two replicas (one state: their shared database)."""
    from datetime import UTC, datetime, timedelta

    from sync.lock import SyncBusy

    class NoLease:
        def acquire(self) -> None: ...

        def release(self) -> None: ...

    write(kb, "a.md", "# A\n\nSome text about the alpha procedure.")
    state = MemorySyncState()
    [one, two] = [SyncRunner([SyncSource("kb", FolderConnector(kb))], MemoryIndex(),
                             HashEmbedder(), state, tmp_path / n, shared_lock=lambda _: NoLease())
                  for n in ("a", "b")]
    await one.run("kb", full=True)  # the start-up pass, before the tick
    due = datetime.now(UTC)
    await one.run("kb", due=due)
    with pytest.raises(SyncBusy) as busy:
        await two.run("kb", due=due)
    assert "already ran this scheduled sync of 'kb'" in busy.value.user_message
    await two.run("kb", full=True, due=due)  # an incremental run does not cover a full one
    with pytest.raises(SyncBusy):
        await one.run("kb", full=True, due=due)
    await two.run("kb", due=datetime.now(UTC) + timedelta(seconds=1))  # the next tick runs
    assert [r.full for r in state.runs] == [True, False, True, False]


async def test_start_up_removes_a_source_no_longer_configured(
        kb: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`sift serve` with a new sift.toml: the sample's chunks go, as with `sift sync`."""
    caplog.set_level(logging.INFO)
    write(kb, "a.md", "# A\n\nText.")
    index, state = MemoryIndex(), MemorySyncState()
    old = SyncRunner([SyncSource("sample", FolderConnector(kb))], index, HashEmbedder(), state,
                     tmp_path / "locks")
    await old.run("sample", full=True)
    assert await index.count("sample") > 0 and state.documents("sample")
    foreign = SyncRunner([SyncSource("foreign", FolderConnector(kb))], index, HashEmbedder(),
                         MemorySyncState(), tmp_path / "locks")
    await foreign.run("foreign", full=True)  # another writer's chunks in the same index

    runner = SyncRunner([SyncSource("kb", FolderConnector(kb))], index, HashEmbedder(), state,
                        tmp_path / "locks")
    scheduler = SyncScheduler(runner, [SourceSchedule("kb")], sync_on_start=False)
    scheduler.start()
    try:
        for _ in range(100):
            if not await index.count("sample"):
                break
            await asyncio.sleep(0.05)
        assert await index.count("sample") == 0
        assert not state.documents("sample")
        assert "Removed source 'sample' (no longer configured)" in caplog.text
        assert await index.count("foreign") > 0  # not synced by this state: not ours to drop
        assert "foreign" not in caplog.text
    finally:
        await scheduler.stop()


async def test_a_source_no_longer_configured_is_not_synced_again(
        kb: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # `sift sync` with a newer sift.toml removed "kb"; this server started before that.
    write(kb, "a.md", "# A\n\nText.")
    state = MemorySyncState()
    configured = {"kb"}
    scheduler = SyncScheduler(make_runner(kb, tmp_path, state=state),
                              [SourceSchedule("kb", interval_minutes=60)], sync_on_start=False,
                              prune_on_start=False, configured=lambda: set(configured))
    scheduler.start()
    try:
        await scheduler._sync("kb", False)
        assert len(state.runs) == 1  # configured: it runs
        configured.clear()
        with caplog.at_level(logging.WARNING):
            await scheduler._sync("kb", False)
        assert len(state.runs) == 1  # not re-added
        assert scheduler.next_run("kb") is None  # and nothing of it is scheduled any more
        assert "source 'kb' is no longer in sift.toml" in caplog.text
    finally:
        await scheduler.stop()


@pytest.mark.parametrize(("expression", "weekdays"), [
    ("0 9 * * 1", {"Monday"}),
    ("0 9 * * 0", {"Sunday"}),
    ("0 9 * * 7", {"Sunday"}),
    ("0 9 * * 1-5", {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}),
    ("0 9 * * 0,6", {"Saturday", "Sunday"}),
    ("0 9 * * */3", {"Sunday", "Wednesday", "Saturday"}),
    ("0 9 * * mon", {"Monday"}),
    ("0 9 * * *", {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
                   "Sunday"}),
])
def test_cron_days_of_the_week_are_read_as_crontab_reads_them(expression: str,
                                                               weekdays: set[str]) -> None:
    trigger = crontab(expression, timezone=UTC)
    when, seen = datetime(2026, 11, 29, 12, 0, tzinfo=UTC), set()  # a Sunday noon
    for _ in range(7):
        when = trigger.get_next_fire_time(None, when + timedelta(minutes=1))
        seen.add(f"{when:%A}")
    assert seen == weekdays
