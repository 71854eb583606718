"""Progress where bars cannot draw (logs, CI, pipes): a plain line on stderr now and then."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float = 0
    detail: str = ""

    def __str__(self) -> str:
        done = f"{self.completed:g}" + (f"/{self.total:g}" if self.total is not None else "")
        return f"{self.description.strip()} {done}" + (f" ({self.detail})" if self.detail else "")


class PlainProgress:
    """The part of rich's `Progress` our commands use, printed as one line every `every_s`.

    A long run in a CI log or a redirected terminal then shows that it is alive and how far
    it got, without the control characters a live bar would write.
    """

    def __init__(self, stream: TextIO | None = None, *, every_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream or sys.stderr
        self._every_s = every_s
        self._clock = clock
        self._started = self._last = clock()
        self._tasks: list[_Task] = []
        self._unprinted = False  # something changed since the last line

    def add_task(self, description: str, total: float | None = None, **fields: Any) -> int:
        self._tasks.append(_Task(description, total, detail=str(fields.get("detail", ""))))
        return len(self._tasks) - 1

    def advance(self, task_id: int, advance: float = 1) -> None:
        self._tasks[task_id].completed += advance
        self._maybe_print()

    def update(self, task_id: int, **fields: Any) -> None:
        if "detail" in fields:
            self._tasks[task_id].detail = str(fields["detail"])
        self._maybe_print()

    def _maybe_print(self) -> None:
        self._unprinted = True
        if self._clock() - self._last >= self._every_s:
            self._print()

    def _print(self) -> None:
        self._last = self._clock()
        self._unprinted = False
        elapsed = int(self._last - self._started)
        state = "; ".join(str(task) for task in self._tasks)
        print(f"[{elapsed // 60}m{elapsed % 60:02d}s] {state}", file=self._stream, flush=True)

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._unprinted:
            self._print()
