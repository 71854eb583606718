"""Three `sift serve` replicas behind one PostgreSQL and a 3-node Weaviate cluster: each
question is answered once, a duplicated event once, each sync tick runs once, no vote is lost."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import select

from bot.settings import SourceSettings
from rag.embed import LocalEmbedder
from storage.db import Database
from storage.models import Feedback, Interaction, SyncRun
from sync.schedule import EPOCH
from tests.cluster.replicas import TOPICS, question, replica_settings, thumbs_up_total
from tests.cluster.weaviate_cluster import WeaviateCluster
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import (
    APP_TOKEN,
    BOT_USER,
    CHANNEL,
    SIGNING_SECRET,
    USER,
    app_mention,
    block_action,
    next_event_id,
)
from tests.fakes.slack_server import FakeSlack
from tests.scenarios.slack_stack import SlackSift, serve_on_slack, stop_all

pytestmark = [pytest.mark.weaviate, pytest.mark.postgres]
QUESTIONS = 100
TICK_S = 2.0  # the source's schedule: a tick every 2 s while the questions come in
DUP_TS = "1700000000.000001"
IN_FLIGHT = 12  # questions awaiting their answer at once (this machine is shared)


def _source(folder: Path) -> SourceSettings:
    """The corpus, synced on a tick every TICK_S seconds (incremental passes only)."""
    return SourceSettings(name="kb", kind="folder", path=folder,
                          interval_minutes=TICK_S / 60, full_cron="")


async def _start(count: int, tmp_path: Path, cluster: WeaviateCluster, collection: str,
                 database_url: str, anthropic: FakeAnthropic, slack: FakeSlack,
                 embedder: LocalEmbedder, **overrides: object) -> list[SlackSift]:
    running: list[SlackSift] = []
    try:
        for n in range(count):  # one after another: the first one migrates the database
            settings = replica_settings(tmp_path, n, cluster, collection, database_url,
                                        anthropic, slack.api_url, **overrides)
            running.append(await serve_on_slack(settings, embedder, slack))
    except BaseException:
        await stop_all(running)
        raise
    return running


async def _ask_everything(running: list[SlackSift], slack: FakeSlack) -> None:
    slack.add_message(CHANNEL, USER, TOPICS[0], DUP_TS)
    dup = app_mention(f"<@{BOT_USER}> {TOPICS[0]}", ts=DUP_TS, event_id=next_event_id())
    statuses = await asyncio.gather(*(r.driver.event(dup) for r in running))
    assert [d.status for d in statuses] == [200] * len(running)

    in_flight = asyncio.Semaphore(IN_FLIGHT)

    async def ask(n: int) -> None:
        ts = f"1700001000.{n + 1:06d}"
        async with in_flight:
            await running[n % len(running)].driver.mention(
                f"<@{BOT_USER}> {question(n)}", ts=ts, user=f"U{n:04d}")
            for _ in range(2400):  # until its answer is posted (or 2 minutes)
                if any(c.args.get("thread_ts") == ts for c in slack.calls_to("chat.postMessage")):
                    break
                await asyncio.sleep(0.05)
    await asyncio.gather(*(ask(n) for n in range(QUESTIONS)))


async def _vote_everything(running: list[SlackSift], slack: FakeSlack) -> None:
    """A 👍 on every answer, each through another replica than the one that answered."""
    answers = {m["thread_ts"]: m["ts"] for m in slack.posted(CHANNEL)}
    users = {DUP_TS: USER} | {f"1700001000.{n + 1:06d}": f"U{n:04d}" for n in range(QUESTIONS)}
    clicks = [running[i % len(running)].driver.click(
        block_action("up", message_ts=answers[thread], thread_ts=thread, user=users[thread]))
        for i, thread in enumerate(sorted(answers))]
    assert {d.status for d in await asyncio.gather(*clicks)} == {200}


async def _rows(db: Database, model: type, count: int, *where: Any,
                timeout_s: float = 60) -> list[Any]:
    rows: list[Any] = []
    for _ in range(int(timeout_s * 10)):
        with db.read() as session:
            rows = list(session.scalars(select(model).where(*where)))
        if len(rows) >= count:
            return rows
        await asyncio.sleep(0.1)
    raise AssertionError(f"expected {count} {model.__name__} rows, found {len(rows)}")


async def test_three_replicas_share_the_work_once(
        tmp_path: Path, weaviate_cluster: WeaviateCluster, cluster_collection: str,
        corpus_folder: Path,
        database_url: str, embedder: LocalEmbedder, fake_anthropic: FakeAnthropic,
        fake_slack: FakeSlack) -> None:
    running = await _start(3, tmp_path, weaviate_cluster, cluster_collection, database_url,
                           fake_anthropic, fake_slack, embedder, sources=[_source(corpus_folder)],
                           slack_signing_secret=SecretStr(SIGNING_SECRET))
    db = Database(database_url)
    try:
        await _rows(db, SyncRun, 1, SyncRun.status == "ok")  # the first tick syncs the corpus
        await _ask_everything(running, fake_slack)
        await fake_slack.wait_for("chat.postMessage", QUESTIONS + 1, timeout_s=300)
        # People click once they see the answer; Sift links the answer to its record just
        # after posting it (a click in between is told the answer is unknown).
        await _rows(db, Interaction, QUESTIONS + 1, Interaction.message_ref.is_not(None))
        await _vote_everything(running, fake_slack)
        votes = await _rows(db, Feedback, QUESTIONS + 1)
        await asyncio.sleep(3 * TICK_S)  # a few more ticks with nothing else going on
    finally:
        await stop_all(running)  # each replica drains its work before it stops
    try:
        posts = Counter(c.args["thread_ts"] for c in fake_slack.calls_to("chat.postMessage"))
        threads = {DUP_TS} | {f"1700001000.{n + 1:06d}" for n in range(QUESTIONS)}
        assert set(posts) == threads and set(posts.values()) == {1}  # each answered once
        with db.read() as session:
            interactions = list(session.scalars(select(Interaction)))
            runs = list(session.scalars(select(SyncRun)))
        assert len(interactions) == QUESTIONS + 1
        assert {i.status for i in interactions} == {"answered"}, Counter(
            (i.status, i.question.split(" (")[0]) for i in interactions)
        assert len(votes) == QUESTIONS + 1 and {v.vote for v in votes} == {1}
        up, cited = thumbs_up_total(db)
        assert up == cited > 0  # every vote reached every document its answer cited
        ticks = Counter(int((r.started_at - EPOCH).total_seconds() // TICK_S) for r in runs)
        assert len(runs) >= 3 and set(ticks.values()) == {1}, ticks  # one run per tick
        assert {r.status for r in runs[:-1]} == {"ok"}, [(r.status, r.errors) for r in runs]
    finally:
        db.dispose()


async def test_socket_mode_replicas_answer_each_event_once(
        tmp_path: Path, weaviate_cluster: WeaviateCluster, cluster_collection: str,
        corpus_folder: Path,
        database_url: str, embedder: LocalEmbedder, fake_anthropic: FakeAnthropic,
        fake_slack: FakeSlack) -> None:
    """Slack sends each envelope on one of the app's connections and may redeliver it on
    another; every replica holds one connection."""
    running = await _start(3, tmp_path, weaviate_cluster, cluster_collection, database_url,
                           fake_anthropic, fake_slack, embedder, sources=[_source(corpus_folder)],
                           slack_app_token=SecretStr(APP_TOKEN), slack_signing_secret=None)
    db = Database(database_url)
    try:
        await _rows(db, SyncRun, 1, SyncRun.status == "ok")
        for _ in range(500):
            if len(fake_slack.sockets) == 3:
                break
            await asyncio.sleep(0.01)
        fake_slack.add_message(CHANNEL, USER, TOPICS[0], DUP_TS)
        dup = app_mention(f"<@{BOT_USER}> {TOPICS[0]}", ts=DUP_TS, event_id=next_event_id())
        for n in range(3):
            await fake_slack.push(dup, envelope_id=f"dup-{n}", retry_attempt=n, to=n)
        for n in range(6):
            ts = f"1700002000.{n + 1:06d}"
            fake_slack.add_message(CHANNEL, f"U{n:04d}", question(n), ts)
            event = app_mention(f"<@{BOT_USER}> {question(n)}", ts=ts, user=f"U{n:04d}",
                                event_id=next_event_id())
            await fake_slack.push(event, envelope_id=f"env-{n}", to=n % 3)
        await fake_slack.wait_for("chat.postMessage", 7, timeout_s=120)
    finally:
        await stop_all(running)
        db.dispose()
    posts = Counter(c.args["thread_ts"] for c in fake_slack.calls_to("chat.postMessage"))
    assert len(posts) == 7 and set(posts.values()) == {1}
    assert len(fake_slack.socket_acks) == 9  # every envelope acknowledged, duplicates too
