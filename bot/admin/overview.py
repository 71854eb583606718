"""The overview page: daily charts, latency per stage, votes, cost, platforms, the A/B arms."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime, time, timedelta
from typing import Any

from aiohttp import web

from bot.admin.charts import Series, hbars, lines, stacked_bars
from bot.admin.console import KEY, render
from bot.chat.deflection import QUIET, deflection
from bot.prices import price_of
from storage.channel_policies import ChannelPolicyRepository
from storage.columns import utc_now
from storage.console_overview import STATUSES, Day, groups, overview
from storage.outcomes import HelpOutcomes

WINDOWS = {"7d": 7, "30d": 30, "90d": 90}


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
    """Whole UTC days: the window's first day through today, from the per-day rollups."""
    console = request.app[KEY]
    window = request.query.get("window", "30d")
    today = utc_now().date()
    since = today - timedelta(days=WINDOWS.get(window, 30))
    found = await asyncio.to_thread(overview, console.db, since, today)
    start = datetime.combine(since, time(), tzinfo=UTC)
    helped = deflection(await asyncio.to_thread(HelpOutcomes(console.db).since, start),
                        utc_now())
    policies = await asyncio.to_thread(ChannelPolicyRepository(console.db).all)
    arm_chart = hbars("Thumbs-up rate by arm (%)", [(m.mode, (m.thumbs_up_rate or 0) * 100)
                                                    for m in found.modes]) if found.ab else None
    return render(request, "overview.html", window=window, windows=list(WINDOWS),
                  statuses=found.statuses, total=found.statuses.total,
                  latencies=found.latencies, feedback=found.feedback, modes=found.modes,
                  ab=found.ab, arm_chart=arm_chart, platforms=groups(found.days, False, 10),
                  channels=groups(found.days, True, 15),
                  labels={p.channel: p.label for p in policies if p.label},
                  charts=_charts(found.days, console.admin.prices), days=found.days,
                  helped=helped, quiet_hours=f"{QUIET.total_seconds() / 3600:g}")
