"""Pure retrieval metrics at document level (tie-aware recall, MRR, nDCG) and percentiles."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

# A ranking is a list of tie groups: documents that share a rank because their scores are
# equal. Every metric is the expected value over the orders a tie could have been broken in
# (McSherry & Najork, ECIR 2008), so the figures do not depend on an arbitrary tie-break.
Ranking = Sequence[Sequence[str]]
Gains = Mapping[str, float]  # relevant documents and their gain (qrels score > 0)


def tie_groups(scored: Iterable[tuple[str, float]]) -> list[list[str]]:
    """Documents in rank order (first occurrence wins), with equal adjacent scores grouped."""
    groups: list[list[str]] = []
    seen: set[str] = set()
    last: float | None = None
    for doc, score in scored:
        if doc in seen:
            continue
        seen.add(doc)
        if groups and score == last:
            groups[-1].append(doc)
        else:
            groups.append([doc])
        last = score
    return groups


def strict(docs: Iterable[str]) -> list[list[str]]:
    """A ranking without ties (each distinct document its own rank), first occurrence wins."""
    return [[d] for d in dict.fromkeys(docs)]


def _spans(ranking: Ranking, k: int) -> Iterable[tuple[int, Sequence[str], int]]:
    """(start, group, positions of the group inside the top k) for the groups that reach k."""
    start = 0
    for group in ranking:
        if start >= k:
            return
        yield start, group, min(len(group), k - start)
        start += len(group)


def hit_at_k(ranking: Ranking, relevant: Gains, k: int) -> float:
    """1 if a relevant document is among the first k (the expected value across ties)."""
    for _, group, inside in _spans(ranking, k):
        r = sum(1 for d in group if d in relevant)
        if r:
            n = len(group)
            return 1.0 - math.comb(n - r, inside) / math.comb(n, inside)
    return 0.0


def recall_at_k(ranking: Ranking, relevant: Gains, k: int) -> float:
    """The fraction of the relevant documents found among the first k."""
    if not relevant:
        return 0.0
    found = 0.0
    for _, group, inside in _spans(ranking, k):
        found += sum(1 for d in group if d in relevant) * inside / len(group)
    return found / len(relevant)


def mrr_at_k(ranking: Ranking, relevant: Gains, k: int) -> float:
    """Reciprocal rank of the first relevant document, 0 when it is not in the first k."""
    for start, group, _ in _spans(ranking, k):
        n, r = len(group), sum(1 for d in group if d in relevant)
        if not r:
            continue
        # P(the first relevant one sits at offset j of the group) = C(n-1-j, r-1) / C(n, r).
        orders = math.comb(n, r)
        return sum(math.comb(n - 1 - j, r - 1) / orders / (start + j + 1)
                   for j in range(n - r + 1) if start + j + 1 <= k)
    return 0.0


def _discount(position: int) -> float:
    return 1.0 / math.log2(position + 2)  # position is 0-based


def dcg_at_k(ranking: Ranking, relevant: Gains, k: int) -> float:
    total = 0.0
    for start, group, inside in _spans(ranking, k):
        mean_discount = sum(_discount(start + p) for p in range(inside)) / len(group)
        total += sum(relevant.get(d, 0.0) for d in group) * mean_discount
    return total


def ndcg_at_k(ranking: Ranking, relevant: Gains, k: int) -> float:
    """DCG with linear gains over the ideal DCG; 0 when there is no relevant document."""
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    best = sum(g * _discount(i) for i, g in enumerate(ideal))
    return dcg_at_k(ranking, relevant, k) / best if best else 0.0


def precision(doc_ids: Sequence[str], relevant: Gains) -> float | None:
    """The fraction of items (one per chunk) that come from relevant documents; None if none."""
    if not doc_ids:
        return None
    return sum(1 for d in doc_ids if d in relevant) / len(doc_ids)


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the defined values; None when there are none."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in [0, 100]), as numpy's default; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
