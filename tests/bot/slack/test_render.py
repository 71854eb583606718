"""Table tests for the Slack renderers: mrkdwn, escaping, links, splitting, block limits."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from slack_sdk.models.blocks import Block as SdkBlock

from bot.slack.mrkdwn import ZWSP, escape, safe_url, split_text, to_markdown, to_mrkdwn
from bot.slack.render import (
    FEEDBACK_ACTION,
    MAX_BLOCKS,
    SECTION_LIMIT,
    render_answer,
    render_error,
    render_stream,
    streamable,
)
from rag import messages
from rag.types import Answer, AnswerStatus, Citation, Question

LINKS = {1: "https://wiki.example/a", 2: "https://wiki.example/b?x=1&y=2"}
LOUD = re.compile(r"<!(channel|here|everyone)|<@|<!subteam|(?<!\w)@(channel|here|everyone)\b")


def cite(n: int, title: str = "Doc", url: str = "") -> Citation:
    return Citation(n, f"d{n}", title, url or f"https://wiki.example/d{n}", f"kb:d{n}:0")


def answer(text: str, status: AnswerStatus = AnswerStatus.ANSWERED, **kw: Any) -> Answer:
    return Answer(text, status, Question("q", correlation_id="cid123"), **kw)


def texts(blocks: tuple[dict[str, Any], ...]) -> list[str]:
    found = []
    for b in blocks:
        if "text" in b:
            found.append(b["text"]["text"])
        found += [e["text"] for e in b.get("elements", []) if "text" in e and
                  isinstance(e["text"], str)]
    return found


@pytest.mark.parametrize(("raw", "expected"), [
    ("a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"),
    ("<!channel> hi", "&lt;!channel&gt; hi"),
    ("<@U123> and <!subteam^S1>", "&lt;@U123&gt; and &lt;!subteam^S1&gt;"),
    ("already &lt;", "already &amp;lt;"),
    ("hey @here and @Channel", f"hey @{ZWSP}here and @{ZWSP}Channel"),
    ("mail ops@here.com", "mail ops@here.com"),
])
def test_escape(raw: str, expected: str) -> None:
    assert escape(raw) == expected


@pytest.mark.parametrize(("url", "expected"), [
    ("https://wiki.example/a", "https://wiki.example/a"),
    ("https://x.example/?a=1&b=2", "https://x.example/?a=1&amp;b=2"),
    ("https://x.example/a|b>c", "https://x.example/a%7Cb%3Ec"),
    ("javascript:alert(1)", None),
    ("", None),
    ("https://x.example/a b", None),
])
def test_safe_url(url: str, expected: str | None) -> None:
    assert safe_url(url) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Rotate it [1].", "Rotate it <https://wiki.example/a|[1]>."),
    ("Both [1][2].", "Both <https://wiki.example/a|[1]><https://wiki.example/b?x=1&amp;y=2|[2]>."),
    ("Unknown [7].", "Unknown [7]."),
    ("**Bold** and *em* and __u__", "*Bold* and _em_ and *u*"),  # CommonMark: __ is strong
    ("| City | Dinner |\n|---|---|\n| Toronto | 90 |", "```\nCity     Dinner\nToronto  90\n```"),
    ("1. first\n2. second", "1. first\n2. second"),
    ("~~old~~ new", "~old~ new"),
    ("![diagram](https://x.example/d.png)", "diagram"),
    ("## Steps", "*Steps*"),
    ("- one\n  * two", "• one\n  • two"),
    ("> quoted <!here>", ">quoted &lt;!here&gt;"),
    ("See [the guide](https://g.example/x)", "See <https://g.example/x|the guide>"),
    ("Bad [link](javascript:x)", "Bad link"),
    ("`code [1] <b>`", "`code [1] &lt;b&gt;`"),
    ("```\n- a < b\n```", "```\n- a &lt; b\n```"),
    ("2 * 3 * 4", "2 * 3 * 4"),
])
def test_to_mrkdwn(text: str, expected: str) -> None:
    assert to_mrkdwn(text, LINKS) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Rotate it [1].", "Rotate it [[1]](https://wiki.example/a)."),
    ("<!channel> look", f"<{ZWSP}!channel> look"),
    ("ping <@U1> @everyone", f"ping <{ZWSP}@U1> @{ZWSP}everyone"),
    ("`[1]`", "`[1]`"),
])
def test_to_markdown(text: str, expected: str) -> None:
    assert to_markdown(text, LINKS) == expected


def _paragraphs(n: int, size: int) -> str:
    return "\n\n".join(f"P{i} " + "word " * (size // 5) for i in range(n))


@pytest.mark.parametrize("text", [
    _paragraphs(10, 900),  # paragraph boundaries
    "word " * 2000,  # spaces only
    "x" * 7000,  # no boundary at all: hard cuts
    ("<https://wiki.example/a|a long label with spaces> " * 200),  # links must stay whole
    "```\n" + "code line\n" * 800 + "```",  # a code block across pieces
    "a &amp; b " * 1000,  # entities stay whole
])
def test_split_text(text: str) -> None:
    pieces = split_text(text, 3000)
    assert len(pieces) > 1
    assert all(0 < len(p) <= 3000 for p in pieces)
    for p in pieces:
        assert p.count("<") == p.count(">")
        assert p.count("```") % 2 == 0
        assert not re.search(r"&[a-z]{0,3}$", p) and not re.match(r"^[a-z]{1,3};", p)
    joined = re.sub(r"\s+", "", "".join(pieces).replace("```", ""))
    assert joined == re.sub(r"\s+", "", text.replace("```", ""))


def test_short_text_is_one_piece() -> None:
    assert split_text("  hello  ", 3000) == ["hello"]


def test_answer_has_linked_citations_sources_and_feedback() -> None:
    a = answer("Rotate it [1]. Confirm [2].",
               citations=(cite(1, "Rotation"), cite(2, "Checks & <b>")))
    msg = render_answer(a)
    kinds = [b["type"] for b in msg.blocks]
    assert kinds == ["section", "context", "context_actions"]
    assert "<https://wiki.example/d1|[1]>" in msg.blocks[0]["text"]["text"]
    sources = msg.blocks[1]["elements"][0]["text"]
    assert sources == ("*Sources*\n[1] <https://wiki.example/d1|Rotation>\n"
                       "[2] <https://wiki.example/d2|Checks &amp; &lt;b&gt;>")
    element = msg.blocks[2]["elements"][0]
    assert element["type"] == "feedback_buttons" and element["action_id"] == FEEDBACK_ACTION
    assert msg.text.startswith("Rotate it")
    assert_valid(msg.blocks)


def assert_valid(blocks: tuple[dict[str, Any], ...]) -> None:
    """slack_sdk's own block models accept every block, limits included, and lose nothing."""
    for block in blocks:
        parsed = SdkBlock.parse(block)
        assert parsed is not None
        parsed.validate_json()
        assert parsed.to_dict() == block


def test_long_answer_is_split_into_sections() -> None:
    text = _paragraphs(12, 800)
    msg = render_answer(answer(text))
    sections = [b for b in msg.blocks if b["type"] == "section"]
    assert len(sections) >= 4
    assert all(len(s["text"]["text"]) <= SECTION_LIMIT for s in sections)
    assert_valid(msg.blocks)


def test_huge_answer_stays_within_fifty_blocks() -> None:
    msg = render_answer(answer(_paragraphs(200, 2900), citations=(cite(1),)))
    assert len(msg.blocks) == MAX_BLOCKS
    assert msg.blocks[-1]["type"] == "context_actions"
    assert messages.ANSWER_SHORTENED in texts(msg.blocks)[-1]
    assert len(msg.text) <= 4000
    assert_valid(msg.blocks)


def test_no_answer_says_so_and_lists_closest_documents() -> None:
    a = answer(messages.NO_ANSWER, AnswerStatus.NO_ANSWER,
               suggestions=(cite(1, "VPN"), cite(2, "Holidays")))
    msg = render_answer(a)
    assert texts(msg.blocks)[:2] == [
        escape(messages.NO_ANSWER),
        f"{messages.NO_ANSWER_SUGGESTIONS}\n• <https://wiki.example/d1|VPN>\n"
        "• <https://wiki.example/d2|Holidays>"]
    assert msg.blocks[-1]["type"] == "context_actions"


def test_degraded_answer_carries_the_note() -> None:
    msg = render_answer(answer("Do it [1].", AnswerStatus.DEGRADED, citations=(cite(1),)))
    assert escape(messages.DEGRADED_NOTE) in texts(msg.blocks)


def test_error_is_one_sentence_with_reference_and_no_buttons() -> None:
    msg = render_answer(answer("I can't reach the knowledge index right now.",
                               AnswerStatus.ERROR))
    assert [b["type"] for b in msg.blocks] == ["section"]
    assert msg.text == "I can't reach the knowledge index right now. (reference: cid123)"
    assert render_error(messages.INTERNAL_ERROR, "abc").text.endswith("(reference: abc)")


def test_nothing_from_documents_or_model_can_ping() -> None:
    a = answer("<!channel> says [1] <@U999> <!here|here> @everyone",
               citations=(cite(1, "<!everyone> <@U1> title", "https://x.example/<!here>"),),
               suggestions=(cite(2, "<!subteam^S1>"),))
    for rendered in (render_answer(a), render_answer(replace(a, status=AnswerStatus.NO_ANSWER))):
        for t in [*texts(rendered.blocks), rendered.text]:
            assert not LOUD.search(t), t


def test_stream_parts() -> None:
    a = answer("Do it [1].", AnswerStatus.DEGRADED, citations=(cite(1),))
    assert streamable(a) and not streamable(replace(a, status=AnswerStatus.NO_ANSWER))
    stream = render_stream(a)
    assert stream.markdown == "Do it [[1]](https://wiki.example/d1)."
    assert [b["type"] for b in stream.blocks] == ["context", "context", "context_actions"]


def test_an_answer_in_slacks_markdown_block_where_it_renders_all_it_needs() -> None:
    a = answer("## Steps\n\n1. Rotate it [1].\n2. Check <!here> `x`", citations=(cite(1),))
    msg = render_answer(a, markdown=True)
    assert msg.blocks[0] == {"type": "markdown", "text": (
        f"## Steps\n\n1. Rotate it [[1]](https://wiki.example/d1).\n2. Check <{ZWSP}!here> `x`")}
    assert msg.text.startswith("*Steps*")  # notifications and search read mrkdwn
    assert_valid(msg.blocks)
    # A table, which the markdown block does not render, keeps mrkdwn (the table as code).
    table = render_answer(answer("| a | b |\n|---|---|\n| 1 | 2 |"), markdown=True)
    assert table.blocks[0]["type"] == "section" and "```" in table.blocks[0]["text"]["text"]
    # Without the setting, sections as before.
    assert render_answer(a).blocks[0]["type"] == "section"
