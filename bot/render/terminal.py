"""Plain-text rendering for the terminal: the answer, numbered sources, optionally every grade."""

from __future__ import annotations

from bot.render.notes import answer_notes, error_text
from rag import messages
from rag.types import Answer, AnswerStatus, Candidate


def _source_line(n: int, title: str, url: str) -> str:
    return f"  [{n}] {title}" + (f" — {url}" if url else "")


def render_answer(answer: Answer) -> str:
    if answer.status is AnswerStatus.ERROR:
        return error_text(answer)
    lines = [answer.text]
    if answer.status is AnswerStatus.NO_ANSWER and answer.suggestions:
        lines += ["", messages.NO_ANSWER_SUGGESTIONS]
        lines += [_source_line(c.n, c.title, c.url) for c in answer.suggestions]
    if answer.citations:
        lines += ["", "Sources:"]
        lines += [_source_line(c.n, c.title, c.url) for c in answer.citations]
    notes = answer_notes(answer)
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def _grade_cell(c: Candidate) -> str:
    if c.grade is None:
        return "  -  ungraded"
    score = "  ?  " if c.grade.score is None else f"{c.grade.score:5.2f}"
    return f"{score} {c.grade.source.value:9} {c.grade.reason}"


# Over the columns of each candidate's row: rank, retrieval score, grade, grader, reason.
EXPLAIN_HEADER = f"  {'#':>3} {'search':>6} {'grade':>5} {'graded by':9} reason"


def render_explain(answer: Answer) -> str:
    """Every candidate with its retrieval score, grade and the grader's reason."""
    rows = ["", f"Candidates (mode: {answer.mode.value}, search: {answer.search_query!r}):",
            EXPLAIN_HEADER]
    for c in answer.candidates:
        mark = "*" if c.selected else " "
        rows.append(f" {mark}{c.rank:>3} {c.retrieval_score:6.2f} {_grade_cell(c)}")
        rows.append(f"        {c.chunk.title}" + (f" › {c.chunk.section}" if c.chunk.section
                                                     else "") + f"  ({c.chunk.doc_id})")
    timings = ", ".join(f"{k} {v:.0f} ms" for k, v in answer.timings_ms.items())
    rows += ["", f"Timings: {timings}"]
    for stage, usage in answer.usage.items():
        rows.append(f"Tokens {stage}: in {usage.input_tokens}, out {usage.output_tokens}, "
                    f"cache read {usage.cache_read_tokens} ({usage.calls} calls)")
    rows.append("* selected. search: the retrieval score, after what votes and grades taught "
                "the ranking; grade: 0 to 1, from the model (llm), the grade cache or the "
                "heuristic (fast mode)")
    return "\n".join(rows)
