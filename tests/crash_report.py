"""A parallel worker that dies: its failure names the signal and every thread's stack."""

from __future__ import annotations

import faulthandler
import os
import shutil
import signal
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import IO, Any

import pytest

# The controller makes the directory and the workers inherit its name: each worker's
# faulthandler writes there, under the worker's pid, which the controller knows too.
CRASH_DIR = "SIFT_TEST_CRASH_DIR"
MAX_LINES = 80  # of the report: the crashing thread comes first
# Frames of the test runner itself, in every stack: noise in a crash report.
_MACHINERY = ("/site-packages/pluggy/", "/site-packages/_pytest/", "/site-packages/execnet/",
              "/site-packages/xdist/", 'File "<string>"', "Extension modules:")
_STDLIB = sysconfig.get_paths()["stdlib"]
_stream = pytest.StashKey[IO[str]]()  # a worker's
_directory = pytest.StashKey[Path]()  # the controller's, made by it


@pytest.hookimpl(trylast=True)  # after pytest's own faulthandler plugin, which writes to stderr
def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        if config.getoption("numprocesses", None) and CRASH_DIR not in os.environ:
            os.environ[CRASH_DIR] = tempfile.mkdtemp(prefix="sift-test-crashes-")
            config.stash[_directory] = Path(os.environ[CRASH_DIR])
        return
    directory = os.environ.get(CRASH_DIR)
    if directory:
        # A worker's stderr reaches the run's output, but far above the summary; this file is
        # read back into the crashed test's report, where a CI log excerpt shows it.
        stream = open(Path(directory) / f"{os.getpid()}.txt", "w")  # noqa: SIM115 (process-long)
        faulthandler.enable(stream, all_threads=True)
        config.stash[_stream] = stream


def pytest_unconfigure(config: pytest.Config) -> None:
    directory = config.stash.get(_directory, None)
    if directory is not None:  # the workers are gone, and any crash reported
        shutil.rmtree(directory, ignore_errors=True)
    stream = config.stash.get(_stream, None)
    if stream is not None:
        faulthandler.disable()
        stream.close()
        Path(stream.name).unlink(missing_ok=True)  # no crash: nothing to keep


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched: Any) -> None:
    """xdist's report says only that the worker crashed. Its first line (the one the short
    summary shows) gains how the worker ended and the innermost frame of this project's code
    in the crashing thread; the lines after it, every thread's stack."""
    process = _worker_process(getattr(report, "node", None))
    if process is None:
        return
    dump = Path(os.environ.get(CRASH_DIR, "/nonexistent")) / f"{process.pid}.txt"
    threads = _threads(dump.read_text(errors="replace") if dump.is_file() else "")
    headline = f"{report.longrepr}: the worker {_exit_of(process)}"
    if not threads:
        report.longrepr = (f"{headline}; no stack dump (a signal Python cannot catch, e.g. "
                           "SIGKILL from the kernel's OOM killer, leaves none)")
        return
    frames = threads[0][1:]  # the crashing thread's, innermost first
    where = next((frame for frame in frames if _is_own(frame)),
                 frames[0] if frames else "no Python frame")
    report.longrepr = "\n".join([f"{headline}, in {where.strip()}",
                                  *(line for thread in threads for line in thread)][:MAX_LINES])


def _threads(text: str) -> list[list[str]]:
    """faulthandler's dump as one block per thread, the crashing one first, with the frames
    of the test runner's own machinery left out."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(("Thread 0x", "Current thread 0x")):
            blocks.append([line])
        elif blocks and line.strip() and not any(part in line for part in _MACHINERY):
            blocks[-1].append(line)
    return sorted(blocks, key=lambda block: not block[0].startswith("Current"))


def _is_own(frame: str) -> bool:
    return "/site-packages/" not in frame and _STDLIB not in frame


def _worker_process(node: Any) -> subprocess.Popen[bytes] | None:
    """The worker's process, from execnet's popen gateway (None for any other kind)."""
    io = getattr(getattr(node, "gateway", None), "_io", None)
    process = getattr(io, "popen", None)
    return process if isinstance(process, subprocess.Popen) else None


def _exit_of(process: subprocess.Popen[bytes]) -> str:
    try:
        code = process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return "had not exited 5 s after its connection closed"
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"
