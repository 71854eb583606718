"""Estimated LLM cost: USD per million tokens by model-name prefix (SIFT_ADMIN__PRICES)."""

from __future__ import annotations

from collections.abc import Mapping

Prices = Mapping[str, tuple[float, float]]


def price_of(model: str, prices: Prices) -> tuple[float, float]:
    """USD per million (input, output) tokens for the longest matching model-name prefix."""
    matches = [p for p in prices if model.startswith(p)]
    return prices[max(matches, key=len)] if matches else (0.0, 0.0)
