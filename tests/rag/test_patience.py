"""Bounded retries: a transient failure is tried again until the bound, anything else at once."""

from __future__ import annotations

import logging
import time

import pytest

from rag.patience import Patience, Retrying


class Flaky:
    """Fails `times` times with `error`, then returns "done"."""

    def __init__(self, times: int, error: Exception) -> None:
        self.times, self.error, self.calls = times, error, 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return "done"


def transient(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionError)


QUICK = Retrying(Patience(wait_s=2.0, first_s=0.01, cap_s=0.05), transient)


async def test_a_transient_failure_is_tried_again_and_each_retry_is_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    call = Flaky(3, ConnectionError("refused"))
    assert await QUICK.call("vote", call) == "done"
    assert call.calls == 4
    retries = [r for r in caplog.records if "vote failed (refused)" in r.getMessage()]
    assert len(retries) == 3 and all(r.levelno == logging.WARNING for r in retries)


async def test_another_failure_is_raised_at_once() -> None:
    call = Flaky(1, ValueError("bad row"))
    with pytest.raises(ValueError):
        await QUICK.call("vote", call)
    assert call.calls == 1


async def test_it_gives_up_at_the_bound_with_a_log_line(
        caplog: pytest.LogCaptureFixture) -> None:
    call = Flaky(10_000, ConnectionError("refused"))
    started = time.monotonic()
    with pytest.raises(ConnectionError):
        await Retrying(Patience(wait_s=0.3, first_s=0.01, cap_s=0.05), transient).call(
            "vote", call)
    took = time.monotonic() - started
    assert 0.3 <= took < 1.0 and call.calls > 3
    assert any("giving up" in r.getMessage() and r.levelno == logging.ERROR
               for r in caplog.records)


async def test_no_patience_means_no_retry() -> None:
    call = Flaky(1, ConnectionError("refused"))
    with pytest.raises(ConnectionError):
        await Retrying(Patience(0), transient).call("vote", call)
    assert call.calls == 1


@pytest.mark.parametrize(("attempt", "step"), [(0, 0.25), (1, 0.5), (2, 1.0), (3, 2.0),
                                               (9, 2.0)])
def test_pauses_double_up_to_the_cap_and_never_pass_the_deadline(attempt: int,
                                                                 step: float) -> None:
    patience = Patience(wait_s=30)
    pauses = [patience.pause(attempt, left_s=60) for _ in range(50)]
    assert all(step / 2 <= p <= step for p in pauses)
    assert patience.pause(attempt, left_s=0.01) <= 0.01
