"""The overview page: daily charts, latency per stage, votes, cost, platforms, the A/B arms."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from aiohttp import web

from bot.admin.charts import Series, hbars, lines, stacked_bars
from bot.admin.console import KEY, render
from storage.columns import utc_now
from storage.console_overview import STATUSES, Day, daily, groups, sample
from storage.db import Database
from storage.stats import feedback_summary, mode_stats, stage_latencies, status_counts

WINDOWS = {"7d": 7, "30d": 30, "90d": 90}
CLOSED_TTL_S = 600.0


class DailyCache:
    """Past days change only by late votes: they are read once and kept for ten minutes, so
    a view re-reads today's questions only (the window's days counted whole, in UTC)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._closed: dict[date, Day] = {}
        self._since = 0.0

    def days(self, db: Database, since: datetime, now: datetime) -> list[Day]:
        if self._clock() - self._since > CLOSED_TTL_S:
            self._closed, self._since = {}, self._clock()
        today = now.date()
        wanted = [since.date() + timedelta(days=n) for n in range((today - since.date()).days)]
        missing = [d for d in wanted if d not in self._closed]
        if missing:
            found = daily(db, _midnight(missing[0]), _midnight(today))
            for d in wanted[wanted.index(missing[0]):]:
                self._closed[d] = found.get(d, Day(d))
        current = daily(db, _midnight(today)).get(today, Day(today))
        return [self._closed[d] for d in wanted] + [current]


def _midnight(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time(), tzinfo=UTC)


DAILY = web.AppKey("daily", DailyCache)


def price_of(model: str, prices: Mapping[str, tuple[float, float]]) -> tuple[float, float]:
    """USD per million (input, output) tokens for the longest matching model-name prefix."""
    matches = [p for p in prices if model.startswith(p)]
    return prices[max(matches, key=len)] if matches else (0.0, 0.0)


def day_cost(day: Day, prices: Mapping[str, tuple[float, float]]) -> float:
    total = 0.0
    for model, tokens_in, tokens_out in day.tokens:
        per_in, per_out = price_of(model, prices)
        total += (tokens_in * per_in + tokens_out * per_out) / 1_000_000
    return total


def _charts(days: list[Day], prices: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    labels = [d.day.strftime("%m-%d") for d in days]
    statuses = [Series(s.replace("_", " "), [d.statuses.get(s, 0) for d in days])
                for s in STATUSES]
    up_rate = [d.up / (d.up + d.down) * 100 if d.up + d.down else 0.0 for d in days]
    tokens = [Series("input tokens", [sum(t[1] for t in d.tokens) for d in days]),
              Series("output tokens", [sum(t[2] for t in d.tokens) for d in days])]
    costs = [day_cost(d, prices) for d in days]
    return {
        "questions": stacked_bars("Questions per day by outcome", labels, statuses),
        "votes": lines("Thumbs-up rate per day (%)", labels, [Series("thumbs up %", up_rate)],
                       top=100.0),
        "tokens": stacked_bars("Tokens per day", labels, tokens),
        "cost": stacked_bars("Estimated cost per day (USD)", labels,
                             [Series("USD", costs)]),
        "total_cost": sum(costs),
    }


async def overview_page(request: web.Request) -> web.StreamResponse:
    console = request.app[KEY]
    window = request.query.get("window", "30d")
    days = WINDOWS.get(window, 30)
    now = utc_now()
    since = now - timedelta(days=days)
    rows = await asyncio.to_thread(sample, console.db, since)
    day_rows = await asyncio.to_thread(request.app[DAILY].days, console.db, since, now)
    modes = mode_stats(rows)
    ab = len(modes) > 1 or any(r.ab_arm for r in rows)
    charts = _charts(day_rows, console.admin.prices)
    arm_chart = hbars("Thumbs-up rate by arm (%)", [(m.mode, (m.thumbs_up_rate or 0) * 100)
                                                    for m in modes]) if ab else None
    return render(request, "overview.html", window=window, windows=list(WINDOWS),
                  statuses=status_counts(rows), total=sum(d.total for d in day_rows),
                  latencies=stage_latencies(rows), feedback=feedback_summary(rows),
                  sample=len(rows), modes=modes, ab=ab, arm_chart=arm_chart,
                  platforms=groups(day_rows, False, 10), channels=groups(day_rows, True, 15),
                  charts=charts,
                  days=day_rows)

