"""One price table for Claude on every platform; a model with no price costs nothing."""

from __future__ import annotations

import pytest

from bot.prices import base_model, cost, price_of

PRICES = {"claude-haiku": (1.0, 5.0), "claude-sonnet": (3.0, 15.0), "claude": (9.0, 9.0),
          "gpt-4o-mini": (0.15, 0.6)}


@pytest.mark.parametrize(("model", "base", "price"), [
    ("claude-haiku-5-5", "claude-haiku-5-5", (1.0, 5.0)),
    ("us.anthropic.claude-haiku-5-5-20261001-v1:0", "claude-haiku-5-5-20261001-v1:0",
     (1.0, 5.0)),
    ("anthropic.claude-sonnet-5-5-v1:0", "claude-sonnet-5-5-v1:0", (3.0, 15.0)),
    ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-sonnet-5",
     "claude-sonnet-5", (3.0, 15.0)),
    ("claude-sonnet-5-5@20261001", "claude-sonnet-5-5", (3.0, 15.0)),
    ("claude-opus-5", "claude-opus-5", (9.0, 9.0)),
    ("gpt-4o-mini", "gpt-4o-mini", (0.15, 0.6)),
    ("llama3.1:8b", "llama3.1:8b", (0.0, 0.0)),
])
def test_a_platforms_model_id_is_priced_as_the_model(model: str, base: str,
                                                     price: tuple[float, float]) -> None:
    assert base_model(model) == base
    assert price_of(model, PRICES) == price


def test_cost_is_per_million_tokens() -> None:
    assert cost("us.anthropic.claude-haiku-5-5-v1:0", 2_000_000, 100_000, PRICES) == \
        pytest.approx(2.0 + 0.5)
