"""A full disk under a served Sift (tests/disk.py: a real tmpfs, filled to the last block):
readiness says "disk full" (503), the person asking in Slack, the console's sign-in and
`sift sync` each say the disk is full in one sentence; nothing ends in a bare 500 or a
traceback."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from bot.settings import AdminSettings, StorageSettings
from rag import messages
from rag.embed import LocalEmbedder
from tests.admin.conftest import csrf_of
from tests.conftest import unique_collection
from tests.disk import SmallDisk
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import BOT_TOKEN, BOT_USER, CHANNEL, SIGNING_SECRET
from tests.fakes.slack_server import FakeSlack
from tests.scenarios.slack_stack import SlackSift, serve_on_slack, stop_all
from tests.scenarios.stack import settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = pytest.mark.weaviate

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "a long console password"
QUESTION = "How do I rotate the staging database credentials?"
Serve = Callable[[], Awaitable[SlackSift]]


@pytest.fixture
async def served(small_disk: SmallDisk, weaviate_server: ManagedWeaviate,
                 corpus: str, embedder: LocalEmbedder, fake_anthropic: FakeAnthropic,
                 fake_slack: FakeSlack) -> AsyncIterator[Serve]:
    """`sift serve` whose data directory and SQLite database live on the small disk."""
    running: list[SlackSift] = []

    async def serve() -> SlackSift:
        settings = settings_for(
            small_disk.path, weaviate_server, corpus, fake_anthropic,
            database_url="", slack_bot_token=SecretStr(BOT_TOKEN),
            slack_signing_secret=SecretStr(SIGNING_SECRET), slack_api_url=fake_slack.api_url,
            admin=AdminSettings(password=SecretStr(PASSWORD)),
            storage=StorageSettings(min_free_mb=1))
        running.append(await serve_on_slack(settings, embedder, fake_slack))
        return running[-1]

    yield serve
    await stop_all(running)


async def get(url: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, json.loads(await response.text())


async def ready(base_url: str) -> tuple[int, dict[str, Any]]:
    """/readyz once the model has loaded."""
    for _ in range(100):
        status, body = await get(base_url + "/readyz")
        if body.get("status") != "loading":
            return status, body
        await asyncio.sleep(0.1)
    raise AssertionError(body)


async def test_readiness_names_the_full_disk_and_recovers(served: Serve,
                                                          small_disk: SmallDisk) -> None:
    s = await served()
    status, body = await ready(s.sift.base_url)
    assert status == 200 and body["disk"] == {"ok": True}
    small_disk.fill()
    for path in ("/healthz", "/readyz"):
        status, body = await get(s.sift.base_url + path)
        assert status == 503 and body["status"] == "unhealthy", body
        detail = body["disk"]["detail"]
        assert detail.startswith("disk full: no room for the data directory")
        assert str(small_disk.path / "data") in detail and "SIFT_STORAGE__MIN_FREE_MB" in detail
        assert body["database"] == {"ok": True}  # it still reads; it cannot write
    small_disk.free()
    assert (await get(s.sift.base_url + "/healthz"))[0] == 200


async def test_the_person_asking_in_slack_is_told_the_disk_is_full(
        served: Serve, small_disk: SmallDisk) -> None:
    s = await served()
    small_disk.fill()
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts="1700000000.000100")
    posted = await s.answer_in(CHANNEL)
    assert re.fullmatch(re.escape(messages.DISK_FULL) + r" \(reference: \w+\)",
                        posted.args["text"]), posted.args["text"]
    assert posted.args["thread_ts"] == "1700000000.000100"
    small_disk.free()  # room again: the next question is answered, no restart needed
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts="1700000100.000100")
    again = await s.answer_in(CHANNEL, 2)
    assert "<https://wiki.example/staging-creds|[1]>" in str(again.args["blocks"])


async def test_the_console_sign_in_says_the_disk_is_full(served: Serve,
                                                         small_disk: SmallDisk) -> None:
    s = await served()
    jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies of an IP address (127.0.0.1)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        async with session.get(s.sift.base_url + "/admin/login") as page:
            token = csrf_of(await page.text())
        small_disk.fill()
        async with session.post(s.sift.base_url + "/admin/login", allow_redirects=False,
                                data={"csrf": token, "password": PASSWORD,
                                      "next": "/admin/"}) as response:
            html = await response.text()
            assert response.status == 503, html
            assert response.headers["X-Frame-Options"] == "DENY"  # still the console's page
    database = small_disk.path / "data" / "sift.db"
    assert f"The disk under the database at sqlite:///{database} is full" in html
    assert "Traceback" not in html and "sift_admin=" not in response.headers.get(
        "Set-Cookie", "")  # not signed in half-way


def sift_sync(disk: Path, weaviate: ManagedWeaviate,
              knowledge: Path) -> subprocess.CompletedProcess[str]:
    config = disk.parent / "sift.toml"
    config.write_text(f'[[sources]]\nname = "kb"\nkind = "folder"\npath = "{knowledge}"\n')
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "COLUMNS": "500",  # the terminal's width: one line per message
           "SIFT_DATA_DIR": str(disk / "data"), "SIFT_WEAVIATE_URL": weaviate.url,
           "SIFT_WEAVIATE_API_KEY": weaviate.api_key,
           "SIFT_WEAVIATE__GRPC_URL": f"127.0.0.1:{weaviate.ports.grpc}",
           "SIFT_WEAVIATE__COLLECTION": unique_collection("Full")}
    return subprocess.run([sys.executable, "-c", "import sys; from bot.cli import main; "
                           "sys.exit(main())", "--config", str(config), "sync"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


async def test_sift_sync_says_the_disk_is_full(served: Serve, small_disk: SmallDisk,
                                              weaviate_server: ManagedWeaviate,
                                              tmp_path: Path) -> None:
    await served()  # `sift serve` keeps the database open beside the run, as in production
    knowledge = tmp_path / "kb"
    knowledge.mkdir()
    (knowledge / "vpn.md").write_text("# VPN\n\nConnect with the company client.\n")
    small_disk.fill()
    done = await asyncio.to_thread(sift_sync, small_disk.path, weaviate_server, knowledge)
    assert done.returncode == 1, done.stderr
    lock = small_disk.path / "data" / "locks" / "sync-kb.lock"
    assert f"sift: Cannot sync 'kb': the disk is full (writing {lock})." in done.stderr
    assert "Traceback" not in done.stderr and "Errno" not in done.stderr
