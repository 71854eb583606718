"""`sift report`'s deflection section: help questions resolved with and without Sift."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console
from rich.text import Text

from bot.chat.deflection import QUIET, Deflection


def as_json(d: Deflection) -> dict[str, Any]:
    return {"quiet_hours": QUIET.total_seconds() / 3600,
            "overall": [dataclasses.asdict(a) for a in d.overall],
            "weeks": [{"week": w, "channel": c, "arms": [dataclasses.asdict(a) for a in arms]}
                      for w, c, arms in d.weeks]}


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:,.1f}"


def render(d: Deflection, console: Console) -> None:
    from bot.cli.report import plain_table  # one table style for the whole report

    console.print(Text("Help channels: resolved with and without Sift (holdout)", style="bold"))
    if not any(a.questions for a in d.overall):
        console.print("  no help-channel questions in the window\n")
        return
    rows = [[("with Sift" if a.arm == "sift" else "without (holdout)"), a.questions,
             a.by_sift, a.by_person, a.unresolved,
             f"{a.resolution_rate:.0%} ({a.ci_low:.0%}–{a.ci_high:.0%})",
             _minutes(a.median_first_useful_s)] for a in d.overall]
    console.print(plain_table(["arm", "questions", "by Sift", "by a person", "unresolved",
                          "resolved (95% CI)", "median min to useful reply"], rows, right=1))
    console.print(f"  Sift resolves a question when the asker gives ✅ or 👍, or when nobody "
                  f"replies within {QUIET.total_seconds() / 3600:g} h of its answer and nobody "
                  "asks for help.\n")
