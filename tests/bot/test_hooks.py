"""The push route: unknown sources and kinds without pushes are 404, refusals 401 and inert."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.hooks import PushEndpoint, PushRoutes
from sync.push import PushRejected, PushReply, PushRequest
from sync.push_queue import PushSyncs
from sync.runner import SyncRunner, SyncSource
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder
from tests.sync.test_push_queue import Catalogue, doc

SECRET = "s3cret-never-logged"


class TokenReceiver:
    """Accepts a call carrying the secret in a header; names the ids in the query."""

    def __init__(self) -> None:
        self.seen: list[PushRequest] = []

    def receive(self, request: PushRequest) -> PushReply:
        self.seen.append(request)
        if request.header("X-Token") != SECRET:
            raise PushRejected("wrong token")
        if "validationToken" in request.query:  # a handshake: echo, sync nothing
            return PushReply(200, request.query["validationToken"])
        return PushReply(doc_ids=tuple(request.query.get("ids", "").split(",")))


class Served:
    def __init__(self, client: TestClient, source: Catalogue, index: MemoryIndex,
                 pushes: PushSyncs, receiver: TokenReceiver) -> None:
        self.client, self.source, self.index = client, source, index
        self.pushes, self.receiver = pushes, receiver


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    source, index, receiver = Catalogue(doc("1", "refunds"), doc("2", "vpn")), MemoryIndex(), \
        TokenReceiver()
    runner = SyncRunner([SyncSource("desk", source), SyncSource("kb", source)], index,
                        HashEmbedder(), MemorySyncState(), tmp_path / "locks")
    pushes = PushSyncs(runner, gather_s=0.01)
    app = web.Application()
    PushRoutes({"desk": PushEndpoint("zendesk", receiver), "kb": PushEndpoint("folder", None)},
               pushes).mount(app)
    async with TestClient(TestServer(app)) as client:
        yield Served(client, source, index, pushes, receiver)
    await pushes.stop()


async def test_a_verified_push_syncs_the_named_documents(served: Served) -> None:
    response = await served.client.post("/sync/hooks/desk?ids=1", data=b"{}",
                                         headers={"X-Token": SECRET})
    assert response.status == 202
    await served.pushes.idle()
    assert set(await served.index.list_documents("desk")) == {"1"}
    assert served.receiver.seen[0].headers["x-token"] == SECRET  # names in lower case
    assert served.receiver.seen[0].body == b"{}"


async def test_a_refused_push_is_401_and_changes_nothing(served: Served,
                                                        caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    caplog.set_level(logging.INFO)
    for headers in ({}, {"X-Token": "guess"}):
        response = await served.client.post("/sync/hooks/desk?ids=1,2", headers=headers)
        assert response.status == 401
        text = await response.text()
        assert "could not be verified" in text and "reference:" in text
        assert "wrong token" not in text  # the reason is for the operator's log only
    await served.pushes.idle()
    assert served.source.fetched == [] and await served.index.list_documents("desk") == {}
    assert "push to desk refused" in caplog.text and SECRET not in caplog.text


async def test_unknown_sources_and_kinds_without_pushes_are_404(served: Served) -> None:
    unknown = await served.client.post("/sync/hooks/nope", headers={"X-Token": SECRET})
    assert unknown.status == 404 and "no source named 'nope'" in await unknown.text()
    folder = await served.client.post("/sync/hooks/kb", headers={"X-Token": SECRET})
    assert folder.status == 404
    assert "folder, which sends no push notifications" in await folder.text()
    assert served.receiver.seen == []


async def test_a_handshake_is_answered_and_syncs_nothing(served: Served) -> None:
    response = await served.client.get("/sync/hooks/desk?validationToken=abc%20d",
                                       headers={"X-Token": SECRET})
    assert (response.status, await response.text()) == (200, "abc d")
    assert response.content_type == "text/plain"  # an echo is never read as a page
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    await served.pushes.idle()
    assert served.source.fetched == []
