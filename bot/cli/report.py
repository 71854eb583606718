"""`sift report`: what people asked, how it went, and which documents help or only look relevant."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from bot.cli.db import duration, human, storage_errors
from bot.prices import Prices, cost, price_of

if TYPE_CHECKING:
    from storage.report import Report


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "report", help="answer quality, latency, feedback and content gaps",
        description="Summarise the recent interactions (answered, no answer, latency per "
        "stage, feedback, the A/B mode comparison) and the all-time document statistics "
        "(documents retrieved often but graded low, documents never retrieved).")
    parser.add_argument("--since", type=duration, default="7d", metavar="DURATION",
                        help="how far back the interaction sections look (default: 7d)")
    parser.add_argument("--limit", type=int, default=10, metavar="N",
                        help="rows per list (default: 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--include-restricted", action="store_true",
                        help="show the titles of documents the public may not read (for "
                        "operators; default: shown as '(restricted)')")
    parser.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from bot.app import App, load_settings
    from storage.report import ReportOptions, build_report

    app = App(load_settings(args.config))
    prices = app.settings.admin.prices
    options = ReportOptions(window=args.since, limit=max(args.limit, 1),
                            relevant_threshold=app.settings.storage.relevant_threshold,
                            include_restricted=args.include_restricted)
    from bot.chat.deflection import deflection
    from bot.cli.report_deflection import as_json
    from bot.cli.report_deflection import render as render_deflection
    from storage.outcomes import HelpOutcomes

    with storage_errors():
        app.database.require_current()
        report = build_report(app.database, options)
        helped = deflection(HelpOutcomes(app.database).since(report.since), report.until)
    if args.json:
        print(json.dumps({**to_json(report, prices), "deflection": as_json(helped)},
                         ensure_ascii=False))
    else:
        # Piped into a file or a pager, nothing decides a width: rows stay whole, not folded
        # into 80 columns.
        width = None if sys.stdout.isatty() else PIPED_WIDTH
        console = Console(highlight=False, soft_wrap=False, markup=False, width=width)
        render(report, human(args.since), console, prices)
        render_deflection(helped, console)
    return 0


PIPED_WIDTH = 400


def to_json(report: Report, prices: Prices | None = None) -> dict[str, object]:
    data = dataclasses.asdict(report)
    for usage, row in zip(report.models, data["models"], strict=True):
        spent = cost(usage.model, usage.input_tokens, usage.output_tokens, prices or {})
        row.update(cost_usd=round(spent, 6),
                   cost_per_question_usd=round(spent / max(usage.questions, 1), 6))
    data["feedback"]["up_ratio"] = report.feedback.up_ratio
    for mode, row in zip(report.modes, data["modes"], strict=True):
        row.update(thumbs_up_rate=mode.thumbs_up_rate, no_answer_rate=mode.no_answer_rate)
    return json.loads(json.dumps(data, default=_iso))


def _iso(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[object]], right: int) -> Table:
    """A plain table; columns from `right` on hold numbers. Cells are Text, not markup:
    a question containing "[...]" must print as typed."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i, header in enumerate(headers):
        table.add_column(header, justify="right" if i >= right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(Text(str(cell)) for cell in row))
    return table


def _section(console: Console, title: str, headers: Sequence[str],
             rows: Sequence[Sequence[object]], right: int = 1) -> None:
    console.print(Text(title, style="bold"))
    console.print(plain_table(headers, rows, right) if rows else "  none")
    console.print()


def _models(report: Report, console: Console, prices: Prices) -> None:
    rows = []
    for u in report.models:
        spent = cost(u.model, u.input_tokens, u.output_tokens, prices)
        priced = any(price_of(u.model, prices))
        rows.append([u.provider, u.model, u.questions, f"{u.input_tokens:,}",
                     f"{u.output_tokens:,}", f"${spent:,.4f}" if priced else "no price set",
                     f"${spent / max(u.questions, 1):,.5f}" if priced else "-"])
    _section(console, "Tokens and estimated cost by provider and model (SIFT_ADMIN__PRICES)",
             ["provider", "model", "questions", "tokens in", "tokens out", "cost",
              "per question"], rows, right=2)


def render(report: Report, window: str, console: Console, prices: Prices | None = None) -> None:
    stamp = "%Y-%m-%d %H:%M"
    console.print(f"Sift report: the last {window} ({report.since.strftime(stamp)} to "
                  f"{report.until.strftime(stamp)} UTC)\n")
    s = report.statuses
    _section(console, "Questions", ["total", "answered", "no answer", "degraded", "error",
                                    "not indexed yet"],
             [[s.total, s.answered, s.no_answer, s.degraded, s.error, s.not_indexed]], right=0)
    _section(console, "Latency per stage (ms)", ["stage", "n", "p50", "p95"],
             [[x.stage, x.count, _ms(x.p50_ms), _ms(x.p95_ms)] for x in report.latencies])
    f = report.feedback
    console.print(Text("Feedback", style="bold"))
    console.print(f"  {f.up} thumbs up, {f.down} thumbs down ({_pct(f.up_ratio)} positive) "
                  f"on {f.voted_answers} of {f.answers} answers\n" if f.up or f.down
                  else "  no votes in the window\n")
    _section(console, "Mode comparison (A/B)",
             ["mode", "answers", "thumbs-up rate", "no-answer rate", "p50 total ms"],
             [[m.mode, m.count, _pct(m.thumbs_up_rate), _pct(m.no_answer_rate), _ms(m.p50_ms)]
              for m in report.modes])
    _section(console, "By channel", ["channel", "questions", "answered", "no answer",
                                     "thumbs-up rate"],
             [[c.channel, c.count, c.answered, c.no_answer, _pct(c.thumbs_up_rate)]
              for c in report.channels])
    _section(console, "Most thumbs-down questions", ["question", "down", "up", "asked"],
             [[q.question, q.down, q.up, q.asked] for q in report.downvoted])
    _section(console, "Questions without an answer (content gaps)",
             ["question", "asked", "last asked"],
             [[g.question, g.asked, g.last_asked.strftime(stamp)] for g in report.gaps])
    _models(report, console, prices or {})
    _documents(report, console)


def _documents(report: Report, console: Console) -> None:
    _section(console, "Retrieved often, graded low by a model: candidates for rewriting (all "
             f"time, average grade below {report.relevant_threshold:g})",
             ["document", "title", "retrieved", "avg grade", "relevant", "cited", "down"],
             [[d.doc_id, d.title, d.retrieved, f"{d.average_grade:.2f}", d.relevant, d.cited,
               d.thumbs_down] for d in report.low_grade], right=2)
    shown = len(report.never_retrieved)
    more = f", showing {shown}" if shown < report.never_retrieved_total else ""
    _section(console, f"Never retrieved (all time): {report.never_retrieved_total} synced "
             f"documents{more}", ["source", "document"],
             [[d.source, d.doc_id] for d in report.never_retrieved], right=2)
