"""Short-lived runs (CLI commands): start what is missing, connect the index, clean up after."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass

from bot.settings import WeaviateSettings
from rag.index import WeaviateIndex
from weaviate_server import keepalive
from weaviate_server.process import ManagedWeaviate

log = logging.getLogger(__name__)


def _kept_note(minutes: float) -> str:
    shown = f"{minutes:g} minute{'' if minutes == 1 else 's'}"
    return (f"Weaviate keeps running for {shown} after the last command, so the next one "
            "starts at once (`sift weaviate stop` stops it now; "
            "SIFT_WEAVIATE__KEEP_RUNNING_MINUTES=0 stops it after each command).")


@dataclass(frozen=True)
class ManagedRun:
    """The Weaviate a command may start: the managed server (None: SIFT_WEAVIATE_URL names
    one Sift does not run) and its `[weaviate]` settings."""

    managed: ManagedWeaviate | None
    settings: WeaviateSettings


@contextlib.asynccontextmanager
async def weaviate_running(run: ManagedRun, *, announce: bool = True) -> AsyncIterator[None]:
    """Make sure the managed Weaviate runs while the command does. One this command started
    keeps running for `weaviate.keep_running_minutes` after the last command that used it
    (weaviate_server/keepalive.py), or stops at the end when that is 0."""
    managed = run.managed
    if managed is None:
        yield
        return
    minutes = run.settings.keep_running_minutes
    with keepalive.in_use(managed.data_dir):
        started = not managed.status().running
        if started:
            if announce:
                print(f"Starting Weaviate on {managed.url} ...", file=sys.stderr, flush=True)
            await asyncio.to_thread(managed.start, run.settings.start_timeout_s)
            if minutes:  # it outlives this process on purpose; Popen would warn at exit
                warnings.filterwarnings("ignore", "subprocess .* is still running",
                                        ResourceWarning)
                keepalive.leave_running(managed.data_dir, minutes * 60)
                print(_kept_note(minutes), file=sys.stderr, flush=True)
        try:
            yield
        finally:
            if started and not minutes:
                await asyncio.to_thread(managed.stop)


@contextlib.asynccontextmanager
async def connected_index(run: ManagedRun, index: WeaviateIndex, *,
                          announce: bool = True) -> AsyncIterator[WeaviateIndex]:
    """`index` connected, with Weaviate started if needed; closed at the end."""
    async with weaviate_running(run, announce=announce):
        await index.connect()
        try:
            yield index
        finally:
            await index.close()
