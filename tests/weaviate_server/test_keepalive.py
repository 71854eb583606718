"""A Weaviate that `sift ask` started stays up for the next command, then stops when idle;
`sift weaviate stop` stops it at once. Real `sift` processes, a real Weaviate."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.weaviate_server.test_cli import SIFT, cli_env, pid_gone  # noqa: F401 (a fixture)
from weaviate_server import keepalive
from weaviate_server.process import ManagedWeaviate, Ports

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
QUESTION = "How do I reset my MFA?"


def sift(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SIFT), *args], env=env, capture_output=True, text=True,
                          timeout=240, check=False)


def running(env: dict[str, str], ports: Ports) -> bool:
    return ManagedWeaviate(None, Path(env["SIFT_DATA_DIR"]) / "weaviate", ports).status().running


def eventually(check: Callable[[], bool], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return check()


def test_the_next_command_finds_weaviate_running_until_stopped(
        cli_env: tuple[dict[str, str], Ports]) -> None:  # noqa: F811
    env, ports = cli_env
    env["SIFT_WEAVIATE__KEEP_RUNNING_MINUTES"] = "10"
    first = sift(env, "ask", QUESTION)  # the index is empty: exit 1, but Weaviate started
    assert "Starting Weaviate" in first.stderr, first.stderr
    assert "Weaviate keeps running for 10 minutes after the last command" in first.stderr
    assert "The index is empty" in first.stderr
    assert running(env, ports)
    data_dir = Path(env["SIFT_DATA_DIR"]) / "weaviate"
    watcher = keepalive.watcher(data_dir)
    assert watcher is not None
    second = sift(env, "ask", QUESTION)
    assert "Starting Weaviate" not in second.stderr and "The index is empty" in second.stderr
    status = sift(env, "weaviate", "status")
    assert "stops_when_idle" in status.stdout and "after 10 min unused" in status.stdout
    stop = sift(env, "weaviate", "stop")
    assert stop.stdout.strip() == "Weaviate stopped." and not running(env, ports)
    assert eventually(lambda: pid_gone(watcher), 10)


def test_an_idle_weaviate_stops_but_not_while_in_use(
        cli_env: tuple[dict[str, str], Ports]) -> None:  # noqa: F811
    env, ports = cli_env
    env["SIFT_WEAVIATE__KEEP_RUNNING_MINUTES"] = "0.25"  # 15 seconds
    data_dir = Path(env["SIFT_DATA_DIR"]) / "weaviate"
    # Held from before the command (as `sift serve` holds it while it runs): the idle time
    # passes while the lock is held, and the server stays up.
    with keepalive.in_use(data_dir):
        sift(env, "ask", QUESTION)
        time.sleep(15 + 3 * keepalive.CHECK_S)
        assert running(env, ports)
    assert eventually(lambda: not running(env, ports), 30)
    assert "idle for 15 s: stopping Weaviate" in (data_dir / keepalive.WATCHER_LOG).read_text()


def test_zero_minutes_stops_weaviate_with_the_command(
        cli_env: tuple[dict[str, str], Ports]) -> None:  # noqa: F811
    env, ports = cli_env
    env["SIFT_WEAVIATE__KEEP_RUNNING_MINUTES"] = "0"
    done = sift(env, "ask", QUESTION)
    assert "Starting Weaviate" in done.stderr and "keeps running" not in done.stderr
    assert not running(env, ports)
    assert keepalive.watcher(Path(env["SIFT_DATA_DIR"]) / "weaviate") is None
