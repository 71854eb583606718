"""`sift serve` keeps the Weaviate it manages alive: the real process is killed, Sift restarts it,
logs the restart, and /healthz says so; its data directory is private."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import stat
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app import App
from bot.settings import Settings, SyncSettings, WeaviateSettings
from rag.embed import LocalEmbedder
from tests.scenarios.stack import ServedSift
from weaviate_server.process import ManagedWeaviate, free_port, free_ports

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]


async def healthz(sift: ServedSift) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session, session.get(
            sift.base_url + "/healthz") as response:
        return dict(json.loads(await response.text()))


async def test_killed_weaviate_is_restarted_logged_and_reported(
        tmp_path: Path, weaviate_server: ManagedWeaviate, embedder: LocalEmbedder,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    ports = free_ports()
    weaviate = WeaviateSettings(http_port=ports.http, grpc_port=ports.grpc,
                                gossip_port=ports.gossip, data_port=ports.data,
                                raft_port=ports.raft, raft_rpc_port=ports.raft_rpc,
                                profiling_port=ports.profiling, start_timeout_s=120)
    old = os.umask(0o022)
    app = App(Settings(data_dir=tmp_path / "data", weaviate=weaviate,
                       weaviate_binary=weaviate_server.binary, port=free_port(),
                       sync=SyncSettings(sync_on_start=False)))
    app.__dict__["embedder"] = embedder
    sift = ServedSift(app)
    try:
        await sift.start()
    finally:
        os.umask(old)
    try:
        managed = app.managed_weaviate
        assert managed is not None
        health = await healthz(sift)
        assert health["weaviate_process"]["ok"] and "restarts: 0" in str(health)
        data_dir = managed.data_dir
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        assert not [p for p in data_dir.rglob("*") if p.stat().st_mode & 0o077]

        os.kill(int(managed.pid_file.read_text()), signal.SIGKILL)
        deadline = time.monotonic() + 180
        while True:
            health = await healthz(sift)
            if health["weaviate_process"]["ok"] and "restarts: 1" in str(health) and \
                    health["weaviate"]["ok"]:
                break
            assert time.monotonic() < deadline, health
            await asyncio.sleep(0.5)
        assert "Weaviate exited" in caplog.text and "Weaviate restarted" in caplog.text
    finally:
        await sift.stop()
    assert managed.status().running is False  # stopped with `sift serve`, not left behind
