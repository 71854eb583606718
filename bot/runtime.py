"""Short-lived runs (CLI commands): start what is missing, connect the index, clean up after."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from bot.app import App
from rag.index import WeaviateIndex

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def weaviate_running(app: App, *, announce: bool = True) -> AsyncIterator[None]:
    """Make sure the managed Weaviate runs; stop it afterwards only if we started it."""
    managed = app.managed_weaviate
    if managed is None or managed.status().running:
        yield
        return
    if announce:
        print(f"Starting Weaviate on {managed.url} ...", flush=True)
    await asyncio.to_thread(managed.start, app.settings.weaviate.start_timeout_s)
    try:
        yield
    finally:
        await asyncio.to_thread(managed.stop)


@contextlib.asynccontextmanager
async def connected_index(app: App, *, announce: bool = True) -> AsyncIterator[WeaviateIndex]:
    """A connected index over the configured collection, with Weaviate started if needed."""
    async with weaviate_running(app, announce=announce):
        index = app.index()
        await index.connect()
        try:
            yield index
        finally:
            await index.close()
