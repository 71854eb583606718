"""One sync per source at a time, across processes: an fcntl lock the OS drops on kill -9."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path
from types import TracebackType

from rag.errors import SyncError


class SyncBusy(SyncError):
    """Another run holds the source's lock; the caller reports it rather than waiting."""


class SourceLock:
    """An exclusive, non-blocking lock on `<lock_dir>/sync-<source>.lock`.

    flock locks belong to the open file, so a second SourceLock in the same process conflicts
    too, and the kernel releases the lock when the holder dies however it dies.
    """

    def __init__(self, lock_dir: Path, source: str) -> None:
        self.path = lock_dir / f"sync-{source}.lock"
        self.source = source
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise self._unwritable(exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            by = f" (pid {holder})" if holder else ""
            raise SyncBusy(
                f"lock {self.path} is held{by}",
                user_message=f"Another sync of '{self.source}' is running{by}; "
                "try again when it has finished.",
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        except OSError as exc:
            os.close(fd)  # and with it the lock: no run started
            raise self._unwritable(exc) from exc
        self._fd = fd

    def _unwritable(self, exc: OSError) -> SyncError:
        why = ("the disk is full" if exc.errno in (errno.ENOSPC, errno.EDQUOT)
               else exc.strerror or str(exc))
        return SyncError(f"cannot write the lock {self.path}: {exc}", user_message=(
            f"Cannot sync '{self.source}': {why} (writing {self.path})."))

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None

    def __enter__(self) -> SourceLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def _read_pid(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        return str(int(os.pread(fd, 32, 0).decode().strip()))
    return ""
