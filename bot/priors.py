"""The document priors the pipeline applies: admin overrides from storage, else the learned one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from rag.prior import (
    Adjustment,
    GradeEvent,
    OverrideKind,
    PriorConfig,
    VoteEvent,
    evidence,
    multiplier,
    override_adjustment,
)
from storage.columns import utc_now
from storage.overrides import HistoryOfDocuments, OverrideRepository


class StoredPriors:
    """Satisfies rag's `DocumentPriors`: an override wins; otherwise, with `learn`, the
    history's multiplier (documents it leaves at 1.0 are left out)."""

    def __init__(self, overrides: OverrideRepository, history: HistoryOfDocuments,
                 config: PriorConfig, *, learn: bool = True,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self._overrides = overrides
        self._history = history
        self._config = config
        self._learn = learn
        self._clock = clock

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
        now, base_rate = self._clock(), self._history.base_rate()
        for doc, past in self._history.for_documents(rest).items():
            seen = evidence((GradeEvent(relevant, at) for relevant, at in past.grades),
                            (VoteEvent(user, vote, at) for user, vote, at in past.votes),
                            now, self._config)
            factor = multiplier(seen, self._config, base_rate)
            if factor != 1.0:
                found[doc] = Adjustment(factor)
        return found
