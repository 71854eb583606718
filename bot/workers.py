"""`sift serve` workers: more processes on the same port, so one machine's other cores answer too.

A Python process runs its own code on one core at a time. With SIFT_WORKERS=N the `sift
serve` process (the primary) starts N-1 more after its own start-up (Weaviate, migrations);
every process binds the port with SO_REUSEPORT and the kernel spreads connections over them.
Workers are replicas on one machine: they share the database and Weaviate, and what replicas
must agree on (dedupe, quotas, sync leases, console sessions) is already in the database. The
primary alone starts and supervises Weaviate, seeds channel policies, runs the start-up sync,
and restarts a worker that exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bot.web import Health
from weaviate_server.supervisor import Backoff

log = logging.getLogger(__name__)

ENTRY = "import sys; from bot.cli import main; sys.exit(main(sys.argv[1:]))"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
STABLE_S = 60.0  # a worker that lived this long before exiting is restarted without delay


def worker_command(primary_pid: int, config: Path | None) -> list[str]:
    """How the primary starts a worker: the same interpreter and settings (the environment
    is inherited), `--worker-of` naming the primary."""
    options = ["--config", str(config)] if config is not None else []
    return [sys.executable, "-c", ENTRY, *options, "serve", "--worker-of", str(primary_pid)]


def follow_primary(primary_pid: int) -> None:
    """In a worker: be sent SIGTERM when the primary dies (even by SIGKILL), so no worker is
    left holding the port; exit at once if the primary is already gone."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != primary_pid:
        raise SystemExit(f"the sift serve process {primary_pid} that started this worker "
                         "has exited")


class Workers:
    """Starts `count` worker processes and keeps them running until `stop`."""

    def __init__(self, command: Sequence[str], count: int, *, poll_s: float = 1.0,
                 backoff: Backoff | None = None, stop_timeout_s: float = 20.0,
                 on_exit: Callable[[int], None] | None = None) -> None:
        self._command = list(command)
        self._on_exit = on_exit  # told each exited worker's pid (its metrics' live gauges)
        self._poll_s = poll_s
        self._backoff = backoff or Backoff()
        self._stop_timeout_s = stop_timeout_s
        self._processes: list[subprocess.Popen[bytes] | None] = [None] * count
        self._started_at = [0.0] * count
        self._down_since: dict[int, float] = {}  # slot: when its worker was seen exited
        self._failures: dict[int, int] = {}  # slot: exits in a row soon after starting
        self._task: asyncio.Task[None] | None = None
        self.restarts = 0

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._processes if p is not None and p.poll() is None]

    def start(self) -> None:
        for slot in range(len(self._processes)):
            self._spawn(slot)
        self._task = asyncio.create_task(self._watch(), name="sift-workers")

    def _spawn(self, slot: int) -> None:
        # Workers log to the same stderr as the primary; each line carries its own pid.
        process = subprocess.Popen(self._command, stdin=subprocess.DEVNULL)
        self._processes[slot] = process
        self._started_at[slot] = time.monotonic()
        log.info("worker %d started (pid %d)", slot + 1, process.pid)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._poll_s)
            for slot, process in enumerate(self._processes):
                if process is not None and process.poll() is not None:
                    self._restart_when_due(slot, process)

    def _restart_when_due(self, slot: int, process: subprocess.Popen[bytes]) -> None:
        now = time.monotonic()
        if slot not in self._down_since:
            self._down_since[slot] = now
            if self._on_exit is not None:
                self._on_exit(process.pid)
            # A worker that ran a while before exiting starts again at once; one that keeps
            # failing at start-up waits longer each time (the backoff Weaviate's restarts use).
            lived = now - self._started_at[slot]
            self._failures[slot] = 1 if lived > STABLE_S else self._failures.get(slot, 0) + 1
            log.error("worker %d (pid %d) exited with status %s; starting it again in %.0fs",
                      slot + 1, process.pid, process.returncode,
                      self._backoff.after(self._failures[slot]) - self._backoff.first_s)
        if now - self._down_since[slot] >= self._backoff.after(self._failures[slot]) \
                - self._backoff.first_s:
            del self._down_since[slot]
            self._spawn(slot)
            self.restarts += 1

    async def health(self) -> Health:
        running = len(self.pids)
        detail = f"{running} of {len(self._processes)} running, restarts: {self.restarts}"
        return Health(running == len(self._processes), detail)

    async def stop(self) -> None:
        """SIGTERM every worker (each drains its answers in flight), then wait; SIGKILL what
        is still running after `stop_timeout_s`."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        alive = [p for p in self._processes if p is not None and p.poll() is None]
        for process in alive:
            process.terminate()
        deadline = time.monotonic() + self._stop_timeout_s
        for process in alive:
            try:
                await asyncio.to_thread(process.wait, max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.error("worker pid %d did not stop in %.0fs; killing it", process.pid,
                          self._stop_timeout_s)
                process.kill()
                await asyncio.to_thread(process.wait)
