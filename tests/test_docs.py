"""The documentation holds together: every relative link and anchor in README, docs/ and the
other pages resolves, every `sift <command>` they show exists, and README stays one page."""

from __future__ import annotations

import argparse
import itertools
import re
from pathlib import Path

import pytest

from bot.cli import build_parser
from rag.markdown import parse

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "bench" / "README.md",
                *(ROOT / "docs").rglob("*.md")])
README_LINES = 400
# A command as the pages show one: `sift x`, .venv/bin/sift x, or a line starting with it
# (not `/sift …`, Slack's command, nor `kubectl -n sift …`, a namespace).
_COMMAND = re.compile(r"(?:^\s*|`|bin/)sift ([a-z][a-z-]+)", re.M)


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, and a
    repeated one numbered."""
    found: set[str] = set()
    tokens = parse(page.read_text(encoding="utf-8"))
    for opening, inline in itertools.pairwise(tokens):
        if opening.type != "heading_open":
            continue
        words = "".join(c.content for c in inline.children or []
                        if c.type in ("text", "code_inline"))
        slug = re.sub(r"[^\w\- ]", "", words.strip().lower()).replace(" ", "-")
        n, candidate = 0, slug
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


def links(page: Path) -> list[str]:
    found = []
    for token in parse(page.read_text(encoding="utf-8")):
        for child in token.children or []:
            if child.type in ("link_open", "image"):
                found.append(str(child.attrGet("href") or child.attrGet("src") or ""))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    problems = []
    for target in links(page):
        if re.match(r"^(https?:|mailto:)", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            problems.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{target}: no such heading")
    assert problems == []


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nSee [here](missing.md) and [there](#title) and [x](#nope).\n")
    assert links(page) == ["missing.md", "#title", "#nope"]
    assert anchors(page) == {"title"}


def commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_sift_command_shown_exists(page: Path) -> None:
    known = commands() | {"serve"}
    shown = set(_COMMAND.findall(page.read_text(encoding="utf-8")))
    # Words after "sift " in prose ("sift is", "sift answers") are not commands.
    prose = {"is", "and", "or", "the", "a", "to", "in", "on", "it", "as", "for", "reads",
             "answers", "keeps", "runs", "says", "uses", "stores", "has", "retrieves", "does",
             "knowledge", "installs", "brings", "starts", "can", "will", "sees", "learns",
             "gives", "knows", "never", "itself", "only", "then", "first", "stops", "from",
             "with", "serves", "writes", "treats", "checks", "refuses", "sends", "reaches",
             "turns", "records", "waits", "opens", "must", "would", "could", "may", "should",
             "also", "still", "already", "now", "not", "no", "that", "which", "who", "when"}
    unknown = sorted(shown - known - prose)
    assert unknown == [], f"commands that do not exist: {unknown}"


def test_readme_is_one_page_for_people() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES
    assert "make run" in "\n".join(lines[:20]) and "make test" in "\n".join(lines[:20])
    prose = [line for line in lines if not line.startswith(("|", "  "))]
    assert max(len(line) for line in prose) <= 200  # tables aside, lines a person can read
