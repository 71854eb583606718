"""The operating pages: sources and sync (with "sync now"), evaluation reports, channels."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.admin.channels import described
from bot.admin.charts import hbars
from bot.admin.console import KEY, PREFIX, audit, render, require_admin
from rag.errors import SyncError
from storage.channel_policies import ChannelPolicyRepository
from storage.console_docs import FailedDocument, last_runs, problem_documents, source_counts

log = logging.getLogger(__name__)
METRICS = ("recall@5", "recall@10", "mrr@10", "ndcg@10")
SHOWN = 20  # documents with problems on the Sources page; the rest a click away, paged
PAGE = 100


@dataclass(frozen=True)
class SourceView:
    name: str
    kind: str
    schedule: str
    next_run: Any
    counts: Any
    runs: list[Any]
    problems: list[FailedDocument]  # the first SHOWN that failed or have a warning


def _source_views(request: web.Request) -> list[SourceView]:
    console = request.app[KEY]
    counts = source_counts(console.db)
    views = []
    for s in console.settings.resolved_sources:
        schedule = s.cron or (f"every {s.interval_minutes:g} min" if s.interval_minutes
                              else "no incremental schedule")
        if s.full_cron:
            schedule += f"; full pass at cron {s.full_cron}"
        views.append(SourceView(
            s.name, s.kind, schedule,
            console.sync.next_run(s.name) if console.sync is not None else None,
            counts.get(s.name), last_runs(console.db, s.name),
            problem_documents(console.db, s.name, limit=SHOWN)))
    return views


async def sources_page(request: web.Request) -> web.StreamResponse:
    views = await asyncio.to_thread(_source_views, request)
    return render(request, "sources.html", sources=views, page_size=PAGE,
                  can_sync=request.app[KEY].sync is not None,
                  notice=request.query.get("started", ""))


async def source_documents_page(request: web.Request) -> web.StreamResponse:
    """Every document of one source that failed or has a warning, PAGE at a time by id."""
    console = request.app[KEY]
    name = request.match_info["name"]
    if name not in {s.name for s in console.settings.resolved_sources}:
        return render(request, "message.html", 404, title="Unknown source",
                      message=f"There is no source named '{name}'.")
    after = request.query.get("after", "")
    found = await asyncio.to_thread(problem_documents, console.db, name, after=after,
                                    limit=PAGE + 1)
    return render(request, "source_documents.html", source=name, documents=found[:PAGE],
                  after=after, next_after=found[PAGE - 1].doc_id if len(found) > PAGE else "")


async def sync_now(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    console = request.app[KEY]
    name = request.match_info["name"]
    if console.sync is None:
        return render(request, "message.html", 409, title="Sync is not running",
                      message="The sync scheduler is not running in this server.")
    try:
        console.sync.run_now(name)
    except SyncError as exc:
        return render(request, "message.html", 404, title="Unknown source",
                      message=exc.user_message)
    log.info("console: an admin started a sync of %s", name)
    await audit(request, "sync_started", f"source {name}")
    raise web.HTTPSeeOther(f"{PREFIX}/sources?started={name}")


@dataclass(frozen=True)
class EvalReport:
    name: str
    dataset: str
    queries: int
    started_at: str
    modes: dict[str, dict[str, Any]]
    answers: dict[str, Any] | None
    has_chart: bool
    chart: Any


def eval_reports(data_dir: Path) -> list[EvalReport]:
    """Every `sift eval` report.json under the data dir, newest first; unreadable ones skipped
    with a log line."""
    found = []
    for path in sorted((data_dir / "eval").glob("*/report.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("console: cannot read the eval report %s: %s", path, exc)
            continue
        modes = data.get("modes") or {}
        bars = [(f"{mode} {m}", float(v) * 100) for mode, values in modes.items()
                for m, v in values.items() if m in ("recall@10", "ndcg@10") and v is not None]
        found.append(EvalReport(path.parent.name, str(data.get("dataset", "")),
                                int(data.get("queries") or 0), str(data.get("started_at", "")),
                                modes, data.get("answers"),
                                (path.parent / "report.png").is_file(),
                                hbars("Recall@10 and nDCG@10 by mode (%)", bars)))
    found.sort(key=lambda r: r.started_at, reverse=True)
    return found


async def evaluation_page(request: web.Request) -> web.StreamResponse:
    reports = await asyncio.to_thread(eval_reports, request.app[KEY].settings.data_dir)
    return render(request, "evaluation.html", reports=reports, metrics=METRICS)


async def eval_chart(request: web.Request) -> web.StreamResponse:
    """The PNG `sift eval` drew; only for a report the listing knows (no path from the URL)."""
    data_dir = request.app[KEY].settings.data_dir
    names = {r.name for r in await asyncio.to_thread(eval_reports, data_dir)}
    name = request.match_info["name"]
    if name not in names:
        raise web.HTTPNotFound(text="There is no evaluation report with that name.")
    return web.FileResponse(data_dir / "eval" / name / "report.png")


async def channels_page(request: web.Request) -> web.StreamResponse:
    """The stored channel policies; admins edit them (bot/admin/channels.py)."""
    repository = ChannelPolicyRepository(request.app[KEY].db)
    policies = await asyncio.to_thread(repository.all)
    return render(request, "channels.html", policies=policies,
                  described={(p.platform, p.channel): described(p) for p in policies},
                  saved=request.query.get("saved", ""))
