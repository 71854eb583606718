"""The Markdown chunker, table-driven: headings, code, tables, long prose, empty and non-ASCII."""

from __future__ import annotations

import itertools
import re

import pytest

from sync.blocks import count_tokens, parse_blocks
from sync.chunk import ChunkingConfig, chunk_markdown, embedding_text

SMALL = ChunkingConfig(target_tokens=60, overlap_tokens=10, min_tokens=12)


def prose(word: str, sentences: int) -> str:
    return " ".join(f"The {word} sentence number {i} says one plain thing." for i in
                    range(sentences))


CODE = "```python\n" + "\n".join(f"# step {i}\nvalue_{i} = compute({i})" for i in
                                 range(30)) + "\n```"
TABLE = "| Name | Value |\n|------|-------|\n" + "\n".join(
    f"| row {i} | value {i} |" for i in range(25))

CASES = {
    "empty": ("", []),
    "blank lines only": ("\n\n   \n", []),
    "one short paragraph": ("Just a line.", [("", "Just a line.")]),
    "small sections pack together": (
        "# Guide\n\nIntro line here.\n\n## Alpha\n\nAlpha text.\n\n## Beta\n\nBeta text.",
        [("Guide > Alpha / Beta",
          "# Guide\n\nIntro line here.\n\n## Alpha\n\nAlpha text.\n\n## Beta\n\nBeta text.")]),
    "heading path is kept": (
        f"# Guide\n\n## Setup\n\n### Linux\n\n{prose('linux', 6)}\n\n### Mac\n\n"
        f"{prose('mac', 6)}",
        [("Guide > Setup > Linux", None), ("Guide > Setup > Mac", None)]),
    "setext headings": (
        f"Install\n=======\n\n{prose('install', 6)}\n\nUse\n---\n\n{prose('use', 6)}",
        [("Install", None), ("Install > Use", None)]),
    "hashes inside code are not headings": (
        f"## Script\n\n{CODE}", [("Script", f"## Script\n\n{CODE}")]),
    "table stays whole": (
        f"## Limits\n\nThe limits:\n\n{TABLE}\n\nAsk finance.",
        [("Limits", f"## Limits\n\nThe limits:\n\n{TABLE}\n\nAsk finance.")]),
}


@pytest.mark.parametrize("body, expected", CASES.values(), ids=CASES.keys())
def test_chunks(body: str, expected: list[tuple[str, str | None]]) -> None:
    chunks = chunk_markdown(body, SMALL)
    assert [(c.section, c.text if text is not None else None)
            for c, (_, text) in zip(chunks, expected, strict=False)] == expected
    assert len(chunks) == len(expected)


@pytest.mark.parametrize("body", [c[0] for c in CASES.values()] + [
    prose("long", 40), f"# T\n\n{CODE}\n\n{prose('after', 12)}\n\n{TABLE}",
    "日本語の文章です。" * 200, "Grüße aus Köln — naïve café, 💡 emoji. " * 60,
], ids=[*CASES.keys(), "long prose", "mixed", "japanese", "accents and emoji"])
def test_invariants(body: str) -> None:
    chunks = chunk_markdown(body, SMALL)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.text and chunk.text == chunk.text.strip()
        assert chunk.tokens == count_tokens(chunk.text)
    for block in parse_blocks(body):  # code blocks and tables appear whole in one chunk
        if block.kind in ("code", "table"):
            assert sum(block.text in c.text for c in chunks) == 1


def test_long_paragraph_splits_near_target_with_overlap() -> None:
    chunks = chunk_markdown(prose("long", 40), SMALL)
    assert len(chunks) > 3
    assert all(c.tokens <= SMALL.target_tokens + SMALL.overlap_tokens for c in chunks)
    for before, after in itertools.pairwise(chunks):
        last_sentence = re.findall(r"[^.]+\.", before.text)[-1].strip()
        assert after.text.startswith(last_sentence)  # the overlap repeats the tail


def test_run_on_text_without_sentences_is_cut_by_tokens() -> None:
    chunks = chunk_markdown("word " * 500, SMALL)
    assert len(chunks) >= 8
    assert all(c.tokens <= SMALL.target_tokens + SMALL.overlap_tokens for c in chunks)


def test_cjk_text_is_counted_per_character_and_split() -> None:
    text = "日本語の文章です。" * 200
    assert count_tokens("日本語") == 3
    chunks = chunk_markdown(text, SMALL)
    assert len(chunks) > 10
    assert "".join(c.text for c in chunks).count("日本語") >= 200


def test_tiny_trailing_piece_merges_into_its_neighbour() -> None:
    body = f"## Only\n\n{prose('main', 6)}\n\nTail."
    chunks = chunk_markdown(body, ChunkingConfig(target_tokens=60, overlap_tokens=0,
                                                 min_tokens=12))
    assert chunks[-1].text.endswith("Tail.")
    assert all(c.tokens >= 12 for c in chunks)


def test_a_tiny_section_joins_the_next_one_not_the_previous() -> None:
    body = (f"## First\n\n{prose('first', 6)}\n\n## Tiny\n\nSee below.\n\n"
            f"## Big\n\n{prose('big', 12)}")
    chunks = chunk_markdown(body, SMALL)
    holder = next(c for c in chunks if "See below." in c.text)
    assert "## Big" in holder.text and "## First" not in holder.text


def test_heading_with_an_oversized_code_block_stays_together() -> None:
    chunks = chunk_markdown(f"## Script\n\n{CODE}\n\n## Next\n\n{prose('next', 6)}", SMALL)
    assert chunks[0].text.startswith("## Script\n\n```python")
    assert chunks[0].tokens > SMALL.target_tokens  # never cut inside code


def test_title_heading_is_not_repeated_in_the_section() -> None:
    body = f"# Expense policy\n\n## Limits\n\n{prose('limits', 8)}"
    assert {c.section for c in chunk_markdown(body, SMALL, "Expense policy")} == {"Limits"}


def test_heading_labels_drop_anchors_and_escapes() -> None:
    body = f"# BatchGetItem<a name=\"API_Batch\"></a>\n\n{prose('x', 1)}\n\n## Step\\-by\\-step"
    assert parse_blocks(body)[-1].path == ("BatchGetItem", "Step-by-step")


def test_embedding_text_carries_title_and_section() -> None:
    assert embedding_text("VPN", "Setup > Linux", "Run it.") == "VPN\nSetup > Linux\n\nRun it."
    assert embedding_text("VPN", "", "Run it.") == "VPN\n\nRun it."


def test_default_config_targets_about_the_configured_size() -> None:
    chunks = chunk_markdown(prose("default", 200))
    assert all(c.tokens <= 450 for c in chunks)
    assert max(c.tokens for c in chunks) >= 300
