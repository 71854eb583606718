"""`sift sync`: sync the configured sources now, with progress bars and a summary table."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bot.cli.plain_progress import PlainProgress
from rag.errors import ConfigError, SyncError
from sync.interrupt import stop_on_signals
from sync.lock import SourceLock
from sync.report import NoProgress, SyncSummary
from sync.report import Progress as ProgressPort

if TYPE_CHECKING:  # the heavy modules load when the command runs, not for `sift --help`
    from bot.app import App
    from rag.index import WeaviateIndex
    from sync.runner import SyncRunner

COLUMNS = ("added", "updated", "deleted", "unchanged", "failed", "chunks_written")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "sync", help="sync the knowledge sources into the index now",
        description="Read each configured source ([[sources]] in sift.toml; by default the "
        "sample knowledge base), re-index what changed and print a summary. Starts the "
        "managed Weaviate for the duration if it is not running. Exit status: 0 when "
        "everything synced; 1 when a source or a document could not be read (the rest is "
        "indexed); 2 for a configuration error.",
    )
    parser.add_argument("--source", metavar="NAME", help="sync only this source")
    parser.add_argument("--full", action="store_true",
                        help="read every document and prune deleted ones (default: only "
                        "what changed since the last successful sync)")
    parser.add_argument("--dry-run", action="store_true",
                        help="report what would change without embedding or writing")
    parser.add_argument("--rebuild", action="store_true",
                        help="drop the index and re-sync everything (after an embedder change)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object per source instead of a table")
    parser.set_defaults(handler=_sync)


def _sync(args: argparse.Namespace) -> int:
    if args.rebuild and (args.dry_run or args.source):
        raise ConfigError("--rebuild with --dry-run or --source",
                          user_message="--rebuild drops the whole index and re-syncs every "
                          "source; it cannot be combined with --dry-run or --source.")
    from bot.app import App, load_settings
    from bot.source_check import check_folders

    app = App(load_settings(args.config))
    names = [s.name for s in app.settings.resolved_sources]
    if args.source and args.source not in names:
        raise ConfigError(f"unknown source {args.source!r}",
                          user_message=f"There is no source named '{args.source}'; "
                          f"configured sources: {', '.join(names)}.")
    selected = [args.source] if args.source else names
    check_folders(app.settings, selected)
    return asyncio.run(_run(app, args, selected))


async def _run(app: App, args: argparse.Namespace, names: list[str]) -> int:
    console = Console(stderr=True, markup=False)
    failures = 0
    summaries: list[SyncSummary] = []
    rebuild = names if args.rebuild else []
    async with _index(app, rebuild=rebuild, console=console) as index, \
            stop_on_signals() as stop:  # Ctrl-C / SIGTERM: stop at the next batch boundary
        runner = app.sync_runner(index, stop)
        await _prune(runner, dry_run=args.dry_run, console=console)
        for name in names:
            try:
                summary = await _one(runner, name, args, console)
            except SyncError as exc:  # one broken source does not stop the others
                failures += 1
                console.print(f"sift: {exc.user_message}", style="red", highlight=False)
                if stop.requested:
                    break
                continue
            summaries.append(summary)
            if args.json:
                print(json.dumps(summary.as_json()), flush=True)
    if not args.json and summaries:
        _print_table(summaries, Console(markup=False) if sys.stdout.isatty()
                     else Console(width=120, markup=False))
    unread = sum(s.counts.failed for s in summaries)
    if unread:
        console.print(f"sift: {unread} document{'s' if unread != 1 else ''} could not be "
                      "read (listed above); the rest is indexed.", highlight=False)
    return 1 if failures or unread else 0


async def _prune(runner: SyncRunner, *, dry_run: bool, console: Console) -> None:
    """Remove what sources no longer configured left in the index, saying so."""
    for name, chunks in (await runner.prune_unconfigured(dry_run=dry_run)).items():
        if dry_run:
            console.print(f"Would remove source '{name}' ({chunks} chunks): it is no longer "
                          "configured.", highlight=False)
        else:
            console.print(f"Removed source '{name}' (no longer configured): {chunks} chunks.",
                          highlight=False)


async def _one(runner: SyncRunner, name: str, args: argparse.Namespace,
               console: Console) -> SyncSummary:
    full = args.full or args.rebuild
    with _bars(console, name, enabled=not args.json) as progress:
        return await runner.run(name, full=full, dry_run=args.dry_run, progress=progress)


@asynccontextmanager
async def _index(app: App, *, rebuild: list[str],
                 console: Console) -> AsyncIterator[WeaviateIndex]:
    """A connected index, with the managed Weaviate started if needed (bot/runtime.py); with
    `rebuild` (every source's name) the collection is dropped first."""
    from bot.runtime import weaviate_running

    async with weaviate_running(app.weaviate_run):
        index = app.index()
        try:
            await asyncio.to_thread(app.database.upgrade)
            if rebuild:
                await _drop(app, index, rebuild, console)
            await index.connect()
            yield index
        finally:
            await index.close()


async def _drop(app: App, index: WeaviateIndex, names: list[str], console: Console) -> None:
    """Drop the collection while holding every source's lock: no run may write meanwhile."""
    with ExitStack() as locks:
        for name in names:
            locks.enter_context(SourceLock(app.data_dir / "locks", name))
        await index.connect(ensure=False)
        if await index.collection_exists():
            console.print(f"Dropping collection {index.config.collection} ...", highlight=False)
            await index.drop()
        await index.close()


class _Bars:
    """Adapts the job's progress callbacks to two rich progress bars."""

    def __init__(self, progress: Progress | PlainProgress, name: str) -> None:
        self._progress = progress
        # rich's TaskID or PlainProgress's int: each is only handed back to its own progress
        self._docs: Any = progress.add_task(f"{name}: documents", total=None)
        self._chunks: Any = progress.add_task(f"{name}: chunks written", total=None)

    def documents(self, count: int) -> None:
        self._progress.advance(self._docs, count)

    def chunks(self, count: int) -> None:
        self._progress.advance(self._chunks, count)


@contextmanager
def _bars(console: Console, name: str, *, enabled: bool) -> Iterator[ProgressPort]:
    if not enabled:
        yield NoProgress()
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    if not console.is_terminal:  # a log or a pipe: a plain line now and then instead
        with PlainProgress() as plain:
            yield _Bars(plain, name)
        return
    with Progress(*columns, console=console, transient=True) as progress:
        yield _Bars(progress, name)


def _print_table(summaries: list[SyncSummary], console: Console) -> None:
    dry = any(s.dry_run for s in summaries)
    full = any(s.full for s in summaries)
    table = Table(title="Dry run: nothing was written" if dry else "Sync summary",
                  box=box.SIMPLE_HEAD,
                  caption="* full pass (read everything, prune deleted)" if full else None)
    for column in ("source", *COLUMNS, "seconds"):
        table.add_column(column.replace("_written", ""), no_wrap=True,
                         justify="left" if column == "source" else "right")
    for summary in summaries:
        row = summary.as_json()
        table.add_row(summary.source + ("*" if summary.full else ""),
                      *(str(row[c]) for c in COLUMNS), f"{summary.seconds:.1f}")
    console.print(table)
    for summary in summaries:
        shares = summary.phase_shares()
        if summary.chunks_embedded:
            console.print(f"{summary.source}: time " + ", ".join(
                f"{k} {v:.0%}" for k, v in shares.items()), highlight=False)
        for warning in summary.warnings[:20]:
            console.print(f"{summary.source}: warning {warning}", style="yellow",
                          highlight=False)
        for error in summary.errors[:20]:
            console.print(f"{summary.source}: skipped {error}", style="yellow",
                          highlight=False)
        if len(summary.errors) > 20:
            console.print(f"{summary.source}: ... and {len(summary.errors) - 20} more "
                          "(see the log)", style="yellow")

