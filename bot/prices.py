"""Estimated cost of tokens: USD per million, by model-name prefix, whatever the platform."""

from __future__ import annotations

import re
from collections.abc import Mapping

Prices = Mapping[str, tuple[float, float]]

# A platform's decoration of Anthropic's model names: Bedrock's inference-profile region and
# "anthropic." (us.anthropic.claude-haiku-…-v1:0), an ARN's path, Vertex's "@version".
_PLATFORM = re.compile(r"^(?:arn:[^/]+/)?(?:[a-z-]+\.)?anthropic\.")


def base_model(model: str) -> str:
    """The model's name as its maker lists it, for price matching."""
    return _PLATFORM.sub("", model).split("@", 1)[0]


def price_of(model: str, prices: Prices) -> tuple[float, float]:
    """USD per million (input, output) tokens for the longest matching model-name prefix."""
    name = base_model(model)
    matches = [p for p in prices if model.startswith(p) or name.startswith(p)]
    return prices[max(matches, key=len)] if matches else (0.0, 0.0)


def cost(model: str, input_tokens: int, output_tokens: int, prices: Prices) -> float:
    per_in, per_out = price_of(model, prices)
    return (input_tokens * per_in + output_tokens * per_out) / 1_000_000
