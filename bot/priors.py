"""The document priors the pipeline applies: admin overrides from storage, else the learned one."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from rag.prior import (
    Adjustment,
    GradeTally,
    OverrideKind,
    PriorConfig,
    VoteEvent,
    evidence,
    multiplier,
    override_adjustment,
)
from storage.columns import utc_now
from storage.overrides import HistoryOfDocuments, OverrideRepository

# Past this many remembered multipliers the memory starts again (a bound, not a tuning knob).
_MAX_REMEMBERED = 50_000


class StoredPriors:
    """Satisfies rag's `DocumentPriors`: an override wins; otherwise, with `learn`, the
    history's multiplier (documents it leaves at 1.0 are left out).

    Overrides and hidden documents are read on every question: an admin's decision applies at
    once. A learned multiplier moves with weeks of votes and grades, so each one is reused for
    `refresh_s` seconds instead of re-reading a document's whole history on every question
    (that read grows with the history and was a large share of `sift serve`'s time per answer).
    """

    def __init__(self, overrides: OverrideRepository, history: HistoryOfDocuments,
                 config: PriorConfig, *, learn: bool = True, refresh_s: float = 0.0,
                 clock: Callable[[], datetime] = utc_now,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._overrides = overrides
        self._history = history
        self._config = config
        self._learn = learn
        self._refresh_s = refresh_s
        self._clock = clock
        self._monotonic = monotonic
        self._learned: dict[str, tuple[float, float]] = {}  # doc -> (read at, multiplier)
        self._base_rate: tuple[float, float | None] | None = None

    def hidden(self) -> Sequence[str]:
        return self._overrides.hidden()

    def adjustments(self, doc_ids: Sequence[str]) -> Mapping[str, Adjustment]:
        found: dict[str, Adjustment] = {}
        overridden = self._overrides.for_documents(doc_ids)
        for doc, row in overridden.items():
            adjustment = override_adjustment(OverrideKind(row.kind), row.factor, self._config)
            if adjustment is not None:
                found[doc] = adjustment
        rest = [d for d in doc_ids if d not in overridden]
        if not self._learn or not rest:
            return found
        for doc, factor in self._multipliers(rest).items():
            if factor != 1.0:
                found[doc] = Adjustment(factor)
        return found

    def _multipliers(self, doc_ids: Sequence[str]) -> dict[str, float]:
        """The learned multiplier of each document: remembered if read recently, else read."""
        now = self._monotonic()
        fresh: dict[str, float] = {}
        for doc in doc_ids:
            remembered = self._learned.get(doc)
            if remembered is not None and now - remembered[0] < self._refresh_s:
                fresh[doc] = remembered[1]
        stale = [d for d in doc_ids if d not in fresh]
        if not stale:
            return fresh
        at, base_rate = self._clock(), self._current_base_rate(now)
        if len(self._learned) > _MAX_REMEMBERED:
            self._learned.clear()
        for doc, past in self._history.for_documents(stale).items():
            seen_events = evidence(
                (GradeTally(graded, relevant, when) for graded, relevant, when in past.grades),
                (VoteEvent(user, vote, when) for user, vote, when in past.votes),
                at, self._config)
            fresh[doc] = multiplier(seen_events, self._config, base_rate)
            self._learned[doc] = (now, fresh[doc])
        return fresh

    def _current_base_rate(self, now: float) -> float | None:
        if self._base_rate is None or now - self._base_rate[0] >= self._refresh_s:
            self._base_rate = (now, self._history.base_rate())
        return self._base_rate[1]
