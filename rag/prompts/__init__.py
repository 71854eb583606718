"""Prompt texts, kept as Markdown files beside this module so they can be read and reviewed."""

from __future__ import annotations

from functools import cache
from importlib import resources

# Every system prompt carries this string; an answer that repeats it is leaking the prompt
# (rag/output_policy.py withholds such answers).
CANARY = "SIFT-CANARY-5e2d9a71c4"
SYSTEM_PROMPTS = ("answer", "grade", "grade_batch", "understand")


@cache
def load(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8").strip()


def all_texts() -> tuple[str, ...]:
    """The system prompts the request path sends, for leak detection."""
    return tuple(load(name) for name in SYSTEM_PROMPTS)
