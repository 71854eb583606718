"""The evaluation judge's prompts, as Markdown files beside this module."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8").strip()
