"""A real filesystem of a few megabytes for a test to fill up: a tmpfs that root mounts.

CI (.ci/run) runs as root on a fresh machine, where `mount -t tmpfs` works; elsewhere the test
fails saying why (it never skips). A full tmpfs answers ENOSPC to every write that needs a new
block, exactly as a full disk does: SQLite reports SQLITE_FULL, a lock file's write fails."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

FILLER = ".filler"


class SmallDisk:
    """A tmpfs of `size_mb` mounted at `path`; `fill` takes every free block, `free` gives
    them back."""

    def __init__(self, path: Path, size_mb: int) -> None:
        self.path = path
        self.size_mb = size_mb

    def mount(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m,mode=0755",
                               "tmpfs", str(self.path)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.fail(f"The full-disk tests mount a {self.size_mb} MB tmpfs, which needs "
                        f"root (CAP_SYS_ADMIN), as CI has: `mount` said {done.stderr.strip()!r} "
                        f"(running as uid {os.geteuid()}).", pytrace=False)

    def unmount(self) -> None:
        done = subprocess.run(["umount", str(self.path)], capture_output=True)
        if done.returncode != 0:  # something still holds a file open: detach it anyway
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)

    @property
    def free_bytes(self) -> int:
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize

    def fill(self) -> None:
        """Write a file until the disk refuses: afterwards not one block is free."""
        block = b"\0" * 65536
        fd = os.open(self.path / FILLER, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                try:
                    os.write(fd, block if self.free_bytes >= len(block) else b"\0" * 4096)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
        finally:
            os.close(fd)
        assert self.free_bytes == 0, f"{self.free_bytes} bytes still free"

    def free(self) -> None:
        (self.path / FILLER).unlink(missing_ok=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """An 8 MB disk of the test's own, unmounted afterwards."""
    disk = SmallDisk(tmp_path / "disk", 8)
    disk.mount()
    try:
        yield disk
    finally:
        with contextlib.suppress(OSError):
            disk.free()
        disk.unmount()
