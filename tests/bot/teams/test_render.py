"""Table tests for the Teams renderer: citations, fallback list, label, notes, no mentions."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot.teams.render import (
    ABSTRACT_LIMIT,
    MAX_CITATIONS,
    NAME_LIMIT,
    TeamsCitation,
    TeamsReply,
    link,
    no_pings,
    render_answer,
    render_notice,
    safe_url,
)
from rag import messages
from rag.types import (
    Answer,
    AnswerStatus,
    Candidate,
    Chunk,
    Citation,
    Grade,
    GradeSource,
    Question,
)

AT_TAG = re.compile(r"<\s*/?\s*at\b", re.IGNORECASE)


def chunk(n: int, text: str = "Reset the VPN token in the portal.", *, title: str = "Doc",
          section: str = "", tags: tuple[str, ...] = ()) -> Chunk:
    return Chunk(f"kb:d{n}:0", f"d{n}", "kb", title, text, url=f"https://wiki.example/d{n}",
                 section=section, tags=tags)


def cite(n: int, title: str = "Doc", url: str = "") -> Citation:
    return Citation(n, f"d{n}", title, url or f"https://wiki.example/d{n}", f"kb:d{n}:0")


def answer(text: str, status: AnswerStatus = AnswerStatus.ANSWERED, **kw: Any) -> Answer:
    kw.setdefault("models", {"generate": "claude"})
    return Answer(text, status, Question("q", correlation_id="cid123"), **kw)


def candidates(*chunks: Chunk) -> tuple[Candidate, ...]:
    return tuple(Candidate(i, c, 1.0, selected=True) for i, c in enumerate(chunks, start=1))


@pytest.mark.parametrize(("raw", "expected"), [
    ("<at>Jane</at> said hi", "Jane said hi"),
    ("<AT id=\"0\">Everyone</AT> now", "Everyone now"),
    ("< at >x</ at>", "x"),
    ("a < b and c > d", "a < b and c > d"),
    ("<img src=x onerror=1>", "&lt;img src=x onerror=1>"),
    ("<a href='https://evil'>click</a>", "&lt;a href='https://evil'>click&lt;/a>"),
    ("use `<b>` and\n```\n<div>\n```", "use `<b>` and\n```\n<div>\n```"),
    ("code `<at>x</at>` too", "code `x` too"),
    ("> quoted line", "> quoted line"),
])
def test_no_pings(raw: str, expected: str) -> None:
    assert no_pings(raw) == expected


@pytest.mark.parametrize(("url", "expected"), [
    ("https://wiki.example/a", "https://wiki.example/a"),
    ("https://wiki.example/a_(b)", "https://wiki.example/a_%28b%29"),
    ("javascript:alert(1)", None),
    ("https://x.example/a b", None),
    ("", None),
])
def test_safe_url(url: str, expected: str | None) -> None:
    assert safe_url(url) == expected


@pytest.mark.parametrize(("url", "title", "expected"), [
    ("https://w.example/a", "VPN guide", "[VPN guide](https://w.example/a)"),
    ("https://w.example/a", "Guide [draft]", "[Guide (draft)](https://w.example/a)"),
    ("https://w.example/a", "<at>Ops</at> runbook", "[Ops runbook](https://w.example/a)"),
    ("ftp://w.example/a", "Old", "Old"),
    ("https://w.example/a", "", "[https://w.example/a](https://w.example/a)"),
])
def test_link(url: str, title: str, expected: str) -> None:
    assert link(url, title) == expected


def test_answer_with_citation_entities() -> None:
    a = answer("Reset it in the portal [1]. Then sign in again [2].",
               citations=(cite(1, "VPN"), cite(2, "SSO", url="javascript:x")),
               candidates=candidates(chunk(1, "# VPN\n\nReset the   token.", section="Reset",
                                           tags=("vpn", "x" * 40, "auth", "extra")),
                                     chunk(2, "Sign in.")))
    reply = render_answer(a)
    assert reply.text == "Reset it in the portal [1]. Then sign in again [2]."
    assert reply.citations == (
        TeamsCitation(1, "VPN › Reset", "VPN Reset the token.", "https://wiki.example/d1",
                      ("vpn", "x" * 27 + "…", "auth")),
        TeamsCitation(2, "SSO", "Sign in.", None, ()),
    )
    assert reply.ai_generated and reply.feedback


def test_fallback_lists_sources_in_the_text() -> None:
    a = answer("Do this [1].", citations=(cite(1, "VPN [v2]"),))
    reply = render_answer(a, citation_entities=False)
    assert reply.citations == ()
    assert reply.text == ("Do this [1].\n\n**Sources**\n\n"
                          "- [1] [VPN (v2)](https://wiki.example/d1)")


def sources(*ns: int) -> str:
    return f"**{messages.SOURCES_HEADING}**\n\n" + "\n".join(
        f"- [{n}] [Doc](https://wiki.example/d{n})" for n in ns)


def markers(count: int) -> str:
    return " ".join(f"Step [{n}]." for n in range(1, count + 1))


@pytest.mark.parametrize(("count", "rich", "entities", "listed"), [
    (MAX_CITATIONS, True, MAX_CITATIONS, ()),  # every marker opens a pop-up: no list
    (MAX_CITATIONS + 1, True, MAX_CITATIONS, (21,)),
    (MAX_CITATIONS + 3, True, MAX_CITATIONS, (21, 22, 23)),
    (MAX_CITATIONS + 3, False, 0, tuple(range(1, 24))),  # no pop-ups: every source listed
])
def test_markers_past_the_citation_cap_are_listed(count: int, rich: bool, entities: int,
                                                  listed: tuple[int, ...]) -> None:
    a = answer(markers(count), citations=tuple(cite(n) for n in range(1, count + 1)))
    reply = render_answer(a, citation_entities=rich)
    assert [c.position for c in reply.citations] == list(range(1, entities + 1))
    assert reply.text == (f"{markers(count)}\n\n{sources(*listed)}" if listed
                          else markers(count))


def test_listed_sources_come_before_the_notes() -> None:
    a = answer(markers(21), AnswerStatus.DEGRADED,
               citations=tuple(cite(n) for n in range(1, 22)))
    assert render_answer(a).text == (
        f"{markers(21)}\n\n{sources(21)}\n\n_{messages.DEGRADED_NOTE}_")


@pytest.mark.parametrize(("kw", "ai"), [
    ({}, True),
    ({"models": {}}, False),  # fast mode: heuristic grades, quoted excerpts
    ({"models": {"grade": "haiku"}, "extractive": True}, True),
])
def test_ai_label_means_a_model_took_part(kw: dict[str, Any], ai: bool) -> None:
    assert render_answer(answer("Text [1].", citations=(cite(1),), **kw)).ai_generated is ai


def test_limits_on_citation_fields() -> None:
    many = tuple(cite(n, "T" * 200) for n in range(1, 26))
    a = answer("x", citations=many, candidates=candidates(chunk(1, "word " * 100)))
    reply = render_answer(a)
    assert len(reply.citations) == MAX_CITATIONS
    assert all(len(c.name) <= NAME_LIMIT for c in reply.citations)
    assert len(reply.citations[0].abstract) <= ABSTRACT_LIMIT
    assert reply.citations[0].abstract.endswith("…")


def test_no_answer_lists_suggestions_without_label() -> None:
    a = answer(messages.NO_ANSWER, AnswerStatus.NO_ANSWER,
               suggestions=(cite(1, "VPN"), cite(2, "Laptops")))
    reply = render_answer(a)
    assert reply == TeamsReply(
        f"{messages.NO_ANSWER}\n\n**{messages.NO_ANSWER_SUGGESTIONS}**\n\n"
        "- [VPN](https://wiki.example/d1)\n- [Laptops](https://wiki.example/d2)",
        ai_generated=False, feedback=True)


def test_degraded_and_uncited_notes() -> None:
    a = answer("Maybe [1].", AnswerStatus.DEGRADED, citations=(cite(1),), uncited_claims=True)
    text = render_answer(a).text
    assert text.endswith(f"_{messages.DEGRADED_NOTE}_\n\n_{messages.UNCITED_NOTE}_")


@pytest.mark.parametrize(("source", "noted"), [(GradeSource.FALLBACK, True),
                                               (GradeSource.LLM, False)])
def test_no_answer_says_when_sources_went_unchecked(source: GradeSource, noted: bool) -> None:
    graded = Candidate(1, chunk(1), 0.9, grade=Grade(None if noted else 0.1, "r", source))
    text = render_answer(answer(messages.NO_ANSWER, AnswerStatus.NO_ANSWER,
                                candidates=(graded,))).text
    assert (messages.UNCHECKED_NO_ANSWER_NOTE in text) is noted


def test_error_has_reference_and_nothing_else() -> None:
    reply = render_answer(answer(messages.INTERNAL_ERROR, AnswerStatus.ERROR))
    assert reply == TeamsReply(messages.with_reference(messages.INTERNAL_ERROR, "cid123"))


def test_model_and_document_text_never_mentions() -> None:
    a = answer("Ask <at>Team</at> [1].", AnswerStatus.NO_ANSWER,
               suggestions=(cite(1, "<at>General</at>"),), citations=(cite(1, "<at>x</at>"),),
               candidates=candidates(chunk(1, "<at>Ops</at> owns it", tags=("<at>t</at>",))))
    for rich in (True, False):
        reply = render_answer(a, citation_entities=rich)
        fields = [reply.text] + [f for c in reply.citations
                                 for f in (c.name, c.abstract, *c.keywords)]
        assert not any(AT_TAG.search(f) for f in fields)


def test_notice() -> None:
    assert render_notice("Too long <at>x</at>") == TeamsReply("Too long x")
