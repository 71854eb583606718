"""The metric functions against hand-computed values, and ties against brute-force averages."""

from __future__ import annotations

import itertools
import math

import pytest

from evaluation.metrics import (
    dcg_at_k,
    hit_at_k,
    mean,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    precision,
    recall_at_k,
    strict,
    tie_groups,
)

L3, L4, L5 = 1 / math.log2(3), 1 / math.log2(4), 1 / math.log2(5)


@pytest.mark.parametrize(("ranking", "relevant", "k", "hit", "recall"), [
    ([["a"], ["b"], ["c"]], {"b": 1}, 1, 0.0, 0.0),
    ([["a"], ["b"], ["c"]], {"b": 1}, 2, 1.0, 1.0),
    ([["a"], ["b"], ["c"], ["d"]], {"a": 1, "d": 1}, 1, 1.0, 0.5),
    ([["a"], ["b"], ["c"], ["d"]], {"a": 1, "d": 1}, 4, 1.0, 1.0),
    ([["a"], ["b"]], {"z": 1}, 10, 0.0, 0.0),
    ([], {"z": 1}, 10, 0.0, 0.0),
    # one tie of two at the top, the relevant one inside: a coin flip at k=1
    ([["a", "b"]], {"b": 1}, 1, 0.5, 0.5),
    ([["a", "b"]], {"b": 1}, 2, 1.0, 1.0),
    # a tie of three straddling k=2 with two relevant: P(hit) = 1 - C(1,1)/C(3,1)
    ([["x"], ["a", "b", "c"]], {"a": 1, "c": 1}, 2, 2 / 3, (2 * 1 / 3) / 2),
])
def test_hit_and_recall(ranking: list[list[str]], relevant: dict[str, float], k: int,
                        hit: float, recall: float) -> None:
    assert hit_at_k(ranking, relevant, k) == pytest.approx(hit)
    assert recall_at_k(ranking, relevant, k) == pytest.approx(recall)


@pytest.mark.parametrize(("ranking", "relevant", "k", "expected"), [
    ([["a"], ["b"], ["c"]], {"b": 1}, 10, 0.5),
    ([["a"], ["b"], ["c"]], {"c": 1, "b": 1}, 10, 0.5),
    ([["a"], ["b"], ["c"]], {"c": 1}, 2, 0.0),  # found, but after the cut-off
    ([["a", "b"]], {"b": 1}, 10, 0.5 * 1 + 0.5 * 0.5),
    ([["x"], ["a", "b", "c"]], {"a": 1, "c": 1}, 10, (2 / 3) * (1 / 2) + (1 / 3) * (1 / 3)),
    ([["x"], ["a", "b", "c"]], {"a": 1, "c": 1}, 2, (2 / 3) * (1 / 2)),
])
def test_mrr(ranking: list[list[str]], relevant: dict[str, float], k: int,
             expected: float) -> None:
    assert mrr_at_k(ranking, relevant, k) == pytest.approx(expected)


@pytest.mark.parametrize(("ranking", "relevant", "k", "expected"), [
    ([["a"], ["b"], ["c"]], {"b": 1}, 10, L3),
    ([["a"], ["b"], ["c"], ["d"]], {"a": 1, "d": 1}, 10, (1 + L5) / (1 + L3)),
    ([["b"], ["a"]], {"a": 2, "b": 1}, 10, (1 + 2 * L3) / (2 + L3)),  # graded gains
    ([["a"], ["b"], ["c"]], {"c": 1}, 2, 0.0),
    ([["a"], ["b"]], {}, 10, 0.0),
    ([["a", "b"]], {"b": 1}, 10, (1 + L3) / 2),
    ([["x"], ["a", "b", "c"]], {"a": 1, "c": 1}, 10, 2 * (L3 + L4 + L5) / 3 / (1 + L3)),
])
def test_ndcg(ranking: list[list[str]], relevant: dict[str, float], k: int,
              expected: float) -> None:
    assert ndcg_at_k(ranking, relevant, k) == pytest.approx(expected)


def _orders(ranking: list[list[str]]) -> list[list[str]]:
    """Every strict order a tied ranking could have been broken into."""
    per_group = [list(itertools.permutations(g)) for g in ranking]
    return [[d for group in combo for d in group] for combo in itertools.product(*per_group)]


@pytest.mark.parametrize("ranking", [
    [["a", "b", "c"], ["d"], ["e", "f"]],
    [["x"], ["a", "y", "b", "z"], ["c"]],
    [["p", "q"], ["r", "s", "a", "t", "b"]],
])
@pytest.mark.parametrize("k", [1, 2, 3, 5, 10])
def test_tied_metrics_are_the_mean_over_tie_breaks(ranking: list[list[str]], k: int) -> None:
    relevant = {"a": 2.0, "b": 1.0, "c": 1.0, "d": 1.0}
    orders = _orders(ranking)
    for metric in (hit_at_k, recall_at_k, mrr_at_k, ndcg_at_k, dcg_at_k):
        brute = sum(metric(strict(o), relevant, k) for o in orders) / len(orders)
        assert metric(ranking, relevant, k) == pytest.approx(brute), metric.__name__


def test_tie_groups_keep_the_first_chunk_of_each_document() -> None:
    scored = [("a", 0.9), ("b", 0.5), ("a", 0.4), ("c", 0.5), ("d", 0.1)]
    assert tie_groups(scored) == [["a"], ["b", "c"], ["d"]]
    assert strict(["a", "b", "a", "c"]) == [["a"], ["b"], ["c"]]


def test_precision_mean_percentile() -> None:
    assert precision(["a", "a", "b", "c"], {"a": 1}) == 0.5
    assert precision([], {"a": 1}) is None
    assert mean([1.0, None, 0.0]) == 0.5 and mean([None]) is None
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    assert percentile([5.0], 95) == 5.0 and percentile([], 50) is None
