"""A managed Weaviate that short commands leave running for a while, so that the next `sift
ask` finds it up instead of starting it again; a watcher process stops it once nothing has
used it for that long.

Every process that uses the server holds a shared lock on `in-use.lock` in its data
directory while it does (the kernel drops it if the process dies) and touches `last-used`
when it lets go. The watcher stops the server when `last-used` is older than the idle time
and it can take that lock exclusively: nobody is using the server.

Run as `python -m weaviate_server.keepalive DATA_DIR IDLE_SECONDS` (the commands start it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from weaviate_server.process import ManagedWeaviate, Ports

IN_USE = "in-use.lock"
LAST_USED = "last-used"
WATCHER_PID = "keepalive.pid"
WATCHER_LOG = "keepalive.log"
CHECK_S = 2.0  # how often the watcher looks


def _private(path: Path, mode: str = "a") -> IO[Any]:
    """`path` opened for appending, created readable by its owner alone, as everything in
    the managed server's data directory is."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode.startswith("a") else os.O_TRUNC)
    return os.fdopen(os.open(path, flags, 0o600), mode)


@contextlib.contextmanager
def in_use(data_dir: Path) -> Iterator[None]:
    """Hold the server as used (shared: many commands and servers at once)."""
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _private(data_dir / IN_USE) as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)  # waits while a watcher is stopping the server
        try:
            yield
        finally:
            (data_dir / LAST_USED).touch(mode=0o600)
            fcntl.flock(handle, fcntl.LOCK_UN)


def _alive(pid_file: Path) -> int | None:
    """The pid in `pid_file` if that process is a running watcher, else None."""
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"weaviate_server.keepalive" in cmdline else None


def watcher(data_dir: Path) -> int | None:
    """The pid of the watcher that will stop this server when idle, if one runs."""
    return _alive(data_dir / WATCHER_PID)


def leave_running(data_dir: Path, idle_s: float) -> None:
    """Start the watcher (unless one already runs) that stops the server after `idle_s`
    seconds with nobody using it."""
    if watcher(data_dir) is not None:
        return
    (data_dir / LAST_USED).touch(mode=0o600)
    with _private(data_dir / WATCHER_LOG, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "weaviate_server.keepalive", str(data_dir), str(idle_s)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)  # Ctrl-C in the terminal is for the command, not for it
    with _private(data_dir / WATCHER_PID, "w") as pid_file:
        pid_file.write(str(process.pid))


def stop_watching(data_dir: Path) -> bool:
    """Stop the watcher (the server then runs until stopped); whether one was running."""
    pid = watcher(data_dir)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    (data_dir / WATCHER_PID).unlink(missing_ok=True)
    return True


def _idle_for(data_dir: Path) -> float:
    try:
        return time.time() - (data_dir / LAST_USED).stat().st_mtime
    except OSError:
        return 0.0


def watch(data_dir: Path, idle_s: float, check_s: float = CHECK_S) -> None:
    """Until the server is gone: once idle for `idle_s` and unused, stop it."""
    server = ManagedWeaviate(None, data_dir, Ports(*(0,) * 7))  # stop() needs its pid only
    while server.status().pid is not None:
        if _idle_for(data_dir) >= idle_s:
            with _private(data_dir / IN_USE) as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    pass  # a command or `sift serve` is using it: look again later
                else:
                    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} idle for {idle_s:.0f} s: "
                          "stopping Weaviate", flush=True)
                    server.stop()
                    break
        time.sleep(check_s)
    if _alive(data_dir / WATCHER_PID) == os.getpid():
        (data_dir / WATCHER_PID).unlink(missing_ok=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    watch(Path(sys.argv[1]), float(sys.argv[2]))
