"""`sift serve --workers 2` on embedded defaults (its own Weaviate, SQLite): both processes
answer on one port, each question once, a killed worker comes back, and stopping the primary
stops everything it started."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from bot.workers import ENTRY
from storage.db import Database
from storage.models import Interaction, SyncRun
from tests.fakes.slack_payloads import (
    BOT_TOKEN,
    BOT_USER,
    CHANNEL,
    SIGNING_SECRET,
    app_mention,
    event_request,
    sign,
)
from tests.fakes.slack_server import FakeSlack
from weaviate_server.process import free_port, free_ports

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = 12


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    env: dict[str, str]
    db: Database
    log: Path

    def workers(self) -> set[int]:
        """The primary's child processes that are `sift serve` workers."""
        found = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == self.process.pid and b"--worker-of" in command:
                found.add(int(entry.name))
        return found

    async def health(self) -> dict[str, object]:
        """/healthz over a new connection, so the kernel picks a process each time."""
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(connector=connector) as http, \
                http.get(self.url + "/healthz") as response:
            return dict(json.loads(await response.text()))

    async def answering(self, timeout_s: float = 180) -> set[int]:
        """The pids seen answering /healthz, once the primary and every worker have."""
        seen: set[int] = set()
        for _ in range(int(timeout_s * 10)):
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            with contextlib.suppress(aiohttp.ClientError, ValueError, KeyError):
                seen.add(int(str((await self.health())["pid"])))
            expected = {self.process.pid} | self.workers()
            if len(expected) == 2 and seen >= expected:
                return seen & expected
            await asyncio.sleep(0.1)
        raise AssertionError(f"answering: {seen}, expected {expected}")


def _knowledge(folder: Path) -> None:
    folder.mkdir()
    (folder / "vpn.md").write_text(
        "# VPN setup\n\nInstall the Corpnet client, sign in with your badge number and pick "
        "the nearest gateway. Sessions last ten hours.\n")
    (folder / "leave.md").write_text(
        "# Parental leave\n\nEvery parent gets twenty weeks of paid leave, to be taken within "
        "the child's first two years.\n")


@pytest.fixture
async def served(tmp_path: Path, fake_slack: FakeSlack) -> AsyncIterator[Served]:
    _knowledge(tmp_path / "kb")
    config = tmp_path / "sift.toml"
    config.write_text(f'[[sources]]\nname = "kb"\nkind = "folder"\npath = "{tmp_path / "kb"}"'
                      '\ninterval_minutes = 1440\n')
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("SIFT_") and k != "ANTHROPIC_API_KEY"} | {
        "SIFT_CONFIG": str(config), "SIFT_DATA_DIR": str(tmp_path / "data"),
        "SIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'sift.db'}", "SIFT_PORT": str(port),
        "SIFT_SLACK_BOT_TOKEN": BOT_TOKEN, "SIFT_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SIFT_SLACK_API_URL": fake_slack.api_url, "SIFT_LOG_LEVEL": "INFO"}
    env |= {name: str(number) for name, number in free_ports().settings().items()}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-c", ENTRY, "serve", "--workers", "2"],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    db = Database(env["SIFT_DATABASE_URL"])
    try:
        yield Served(process, f"http://127.0.0.1:{port}", env, db, log)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
            subprocess.run([sys.executable, "-c", ENTRY, "weaviate", "stop"], cwd=ROOT,
                           env=env, capture_output=True, check=False)
        db.dispose()


async def _ask(url: str, n: int, event_id: str) -> int:
    ts = f"1700002000.{n:06d}"
    body, content_type = event_request(app_mention(
        f"<@{BOT_USER}> how long do VPN sessions last? ({n})", ts=ts, user=f"UW{n:03d}",
        event_id=event_id))
    connector = aiohttp.TCPConnector(force_close=True)  # a new connection: any process
    async with aiohttp.ClientSession(connector=connector) as http, http.post(
            url + "/slack/events", data=body.encode(),
            headers={"Content-Type": content_type, **sign(body)}) as response:
        return response.status


async def test_two_workers_answer_each_question_once(served: Served,
                                                     fake_slack: FakeSlack) -> None:
    pids = await served.answering()
    assert len(pids) == 2  # the primary and its worker both took connections on the port
    for _ in range(600):  # the primary's start-up sync indexed the folder
        with served.db.read() as session:
            if session.scalar(select(SyncRun.status).where(SyncRun.status == "ok")):
                break
        await asyncio.sleep(0.1)
    for n in range(QUESTIONS):
        fake_slack.add_message(CHANNEL, f"UW{n:03d}", "how long do VPN sessions last?",
                               f"1700002000.{n:06d}")
    statuses = await asyncio.gather(*(_ask(served.url, n, f"EvW{n:03d}")
                                      for n in range(QUESTIONS)))
    # Slack redelivers an event it thinks was missed: the same id, to whichever process.
    statuses += await asyncio.gather(*(_ask(served.url, 0, "EvW000") for _ in range(4)))
    assert set(statuses) == {200}
    await fake_slack.wait_for("chat.postMessage", QUESTIONS, timeout_s=120)
    await asyncio.sleep(2)  # room for a duplicate answer to show up
    posts = Counter(c.args.get("thread_ts") for c in fake_slack.calls_to("chat.postMessage"))
    assert set(posts.values()) == {1} and len(posts) == QUESTIONS
    answers = [json.dumps(c.args).lower() for c in fake_slack.calls_to("chat.postMessage")]
    assert all("ten hours" in answer for answer in answers)  # from the knowledge base
    with served.db.read() as session:
        assert len(list(session.scalars(select(Interaction)))) == QUESTIONS
        runs = list(session.scalars(select(SyncRun)))
    assert len(runs) == 1  # the start-up pass ran in the primary only
    # Whichever process answers a scrape (a new connection each time), it counts every
    # process's answers (prometheus-client's multi-process files).
    for _ in range(6):
        async with aiohttp.ClientSession() as http, http.get(served.url + "/metrics") as got:
            assert got.status == 200
            families = text_string_to_metric_families(await got.text())
        answered = sum(s.value for f in families for s in f.samples
                       if s.name == "sift_answers_total")
        assert answered == QUESTIONS


async def test_a_killed_worker_is_started_again_and_stop_stops_all(served: Served) -> None:
    await served.answering()
    [worker] = served.workers()
    os.kill(worker, signal.SIGKILL)
    replacement: set[int] = set()
    for _ in range(300):
        replacement = served.workers() - {worker}
        if replacement:
            break
        await asyncio.sleep(0.1)
    assert replacement, "no worker was started in place of the killed one"
    assert (await served.answering()) == {served.process.pid} | replacement
    assert "worker 1 (pid" in served.log.read_text() and "starting it again" in \
        served.log.read_text()
    served.process.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(served.process.wait, 60) == 0
    assert served.workers() == set()
    for pid in replacement:  # the worker is gone, not merely re-parented
        assert not Path(f"/proc/{pid}").exists() or \
            "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    with pytest.raises(aiohttp.ClientError):
        await served.health()  # nothing listens on the port any more


def test_workers_need_a_fixed_port(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("SIFT_")} | {
        "SIFT_DATA_DIR": str(tmp_path / "data"), "SIFT_PORT": "0", "SIFT_WORKERS": "3",
        "SIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'sift.db'}"}
    done = subprocess.run([sys.executable, "-c", ENTRY, "serve"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert "SIFT_WORKERS is 3, but SIFT_PORT is 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_workers_must_be_a_positive_number(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", ENTRY, "serve", "--workers", "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "expected a whole number of processes >= 1" in done.stderr
