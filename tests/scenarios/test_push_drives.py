"""SharePoint (Graph change notifications) and Google Drive (changes.watch channels) through
`sift serve`: the handshakes answered, a notified change searchable within 5 s, a forged
notification 401 with nothing read, a flood one or two delta runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from pydantic import SecretStr

from bot.settings import SourceSettings
from rag.embed import LocalEmbedder
from storage.models import SyncRun
from tests.fakes.gdrive_server import DOC, DriveFile, FakeDrive, permission
from tests.fakes.graph_server import CLIENT_ID, SECRET, TENANT
from tests.fakes.push_payloads import (
    DRIVE_CHANNEL_TOKEN,
    GRAPH_CLIENT_STATE,
    GRAPH_HEADERS,
    GRAPH_VALIDATION_HEADERS,
    drive_message,
    graph_change,
    graph_lifecycle,
)
from tests.fakes.sharepoint_server import FakeFile, FakeSharePoint, org_link
from tests.scenarios.push_support import probe, until
from tests.scenarios.slack_stack import Serve
from tests.scenarios.stack import ServedSift

pytestmark = pytest.mark.weaviate
LIBRARY = "b!lib-1"


async def runs(sift: ServedSift, source: str) -> int:
    rows = await asyncio.to_thread(sift.rows, SyncRun)
    return sum(r.source == source for r in rows)


async def refused(sift: ServedSift, path: str, *calls: tuple[bytes, dict[str, str]]) -> None:
    for body, headers in calls:
        status, text = await sift.post(path, data=body, headers=headers)
        assert status == 401, (headers, text)
        assert GRAPH_CLIENT_STATE not in text and DRIVE_CHANNEL_TOKEN not in text


async def flood(sift: ServedSift, source: str, send: Callable[[], Awaitable[int]]) -> None:
    """30 notifications at once: every one answered, and one delta run (maybe one more)."""
    before = await runs(sift, source)
    statuses = await asyncio.gather(*(send() for _ in range(30)))
    assert set(statuses) == {202}
    await until(lambda: _ran(sift, source, before))
    await asyncio.sleep(1.0)  # a queued repeat would have started and finished by now
    assert 1 <= await runs(sift, source) - before <= 2


async def _ran(sift: ServedSift, source: str, before: int) -> bool:
    return await runs(sift, source) > before


# --- SharePoint / OneDrive: Microsoft Graph change notifications ----------------------------

@pytest.fixture
async def graph() -> AsyncIterator[FakeSharePoint]:
    server = FakeSharePoint()
    server.put(LIBRARY, FakeFile("01A", "Freeze.txt", b"Deploys freeze on Fridays.",
                                 [org_link()]))
    await server.start()
    yield server
    await server.stop()


def sharepoint(server: FakeSharePoint) -> SourceSettings:
    return SourceSettings.model_validate({
        "name": "sp", "kind": "sharepoint", "url": server.graph_url, "token": SecretStr(SECRET),
        "sharepoint": {"tenant_id": TENANT, "client_id": CLIENT_ID,
                       "authority": server.login_url, "drives": [LIBRARY], "pages": False,
                       "client_state": GRAPH_CLIENT_STATE}})


async def notify_graph(sift: ServedSift, body: bytes | None = None) -> int:
    status, _ = await sift.post("/sync/hooks/sp", data=body or graph_change(LIBRARY),
                                headers=GRAPH_HEADERS)
    return status


async def test_graph_change_notifications(make_served: Serve, graph: FakeSharePoint,
                                          embedder: LocalEmbedder) -> None:
    sift = (await make_served(sources=[sharepoint(graph)])).sift
    async with probe(sift, embedder, "sp") as index:
        token = "Validation: Testing client application reachability for subscription"
        started = asyncio.get_running_loop().time()
        status, text = await sift.post(f"/sync/hooks/sp?validationToken={quote(token)}",
                                       data=b"", headers=GRAPH_VALIDATION_HEADERS)
        assert (status, text) == (200, token)
        assert asyncio.get_running_loop().time() - started < 10  # Graph waits 10 s at most
        await refused(sift, "/sync/hooks/sp",
                      (graph_change(LIBRARY, client_state="a guess"), GRAPH_HEADERS),
                      (graph_lifecycle("missed", client_state=""), GRAPH_HEADERS),
                      (b"", GRAPH_HEADERS))
        await index.settled_empty()
        assert not [r for r in graph.requests if "/delta" in r]
        assert await runs(sift, "sp") == 0

        assert await notify_graph(sift) == 202
        await until(lambda: index.finds(f"{LIBRARY}:01A", "Deploys freeze on Fridays."))
        graph.put(LIBRARY, FakeFile("01A", "Freeze.txt", b"Deploys freeze on Thursdays at noon.",
                                    [org_link()], modified="2026-02-01T10:00:00Z"))
        assert await notify_graph(sift) == 202
        await until(lambda: index.finds(f"{LIBRARY}:01A", "Deploys freeze on Thursdays at noon."))
        graph.delete(LIBRARY, "01A")
        graph.put(LIBRARY, FakeFile("01B", "Pager.txt", b"The pager rotates weekly.",
                                    [org_link()]))
        assert await notify_graph(sift, graph_lifecycle("missed")) == 202
        await until(lambda: index.finds(f"{LIBRARY}:01B", "The pager rotates weekly."))
        await until(lambda: index.gone(f"{LIBRARY}:01A"))  # the same delta run deleted it
        await flood(sift, "sp", lambda: notify_graph(sift))


# --- Google Drive: a changes.watch channel --------------------------------------------------

@pytest.fixture
async def drive() -> AsyncIterator[FakeDrive]:
    server = FakeDrive()
    server.put(DriveFile("d1", "Travel policy", DOC, b"<html><body><p>Book trains for trips "
                         b"under four hours.</p></body></html>", [permission("anyone")]))
    await server.start()
    yield server
    await server.stop()


def gdrive(server: FakeDrive, key: Path) -> SourceSettings:
    return SourceSettings.model_validate({
        "name": "gd", "kind": "gdrive", "url": server.url,
        "gdrive": {"key_file": str(key), "channel_token": DRIVE_CHANNEL_TOKEN}})


def later() -> str:
    """A modifiedTime after the last run began (the listing compares whole seconds)."""
    return (datetime.now(UTC) + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


async def notify_drive(sift: ServedSift, state: str = "change", number: int = 2,
                       file: str = "") -> int:
    status, _ = await sift.post("/sync/hooks/gd", data=b"",
                                headers=drive_message(state, number, file=file))
    return status


async def test_drive_channel_notifications(make_served: Serve, drive: FakeDrive,
                                           embedder: LocalEmbedder, tmp_path: Path) -> None:
    sift = (await make_served(sources=[gdrive(drive, drive.key_file(tmp_path))])).sift
    async with probe(sift, embedder, "gd") as index:
        assert await notify_drive(sift, "sync", 1) == 200  # the channel's first message
        await refused(sift, "/sync/hooks/gd",
                      (b"", drive_message("change", 2, token="a guess")),
                      (b"", {k: v for k, v in drive_message("change", 2).items()
                             if k != "X-Goog-Channel-Token"}),
                      (b"", drive_message("change", 2, channel="")))
        await index.settled_empty()
        assert drive.requests == []
        assert await runs(sift, "gd") == 0

        assert await notify_drive(sift) == 202
        await until(lambda: index.finds("d1", "Book trains for trips under four hours."))
        drive.files["d1"].data = b"<p>Book trains for trips under six hours.</p>"
        drive.files["d1"].modified = later()
        assert await notify_drive(sift, number=3) == 202
        await until(lambda: index.finds("d1", "Book trains for trips under six hours."))
        drive.files["d1"].data = b"<p>Book trains for trips under five hours.</p>"
        before = await runs(sift, "gd")  # a files.watch channel names its file: read by id
        assert await notify_drive(sift, "update", 1, file="d1") == 202
        await until(lambda: index.finds("d1", "Book trains for trips under five hours."))
        assert await runs(sift, "gd") == before
        drive.files["d1"].trashed, drive.files["d1"].modified = True, later()
        assert await notify_drive(sift, number=4) == 202
        await until(lambda: index.gone("d1"))
        await flood(sift, "gd", lambda: notify_drive(sift, number=5))
