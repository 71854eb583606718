"""The index contract, run against the in-process fake and against a real Weaviate server."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest

from rag.embed import LocalEmbedder
from rag.errors import ConfigError, RetrievalError
from rag.index import IndexConfig, WeaviateIndex
from rag.ports import Diversity
from rag.types import Chunk, SearchFilters
from tests.conftest import index_config, unique_collection
from tests.fakes.memory_index import MemoryIndex
from weaviate_server.process import ManagedWeaviate, free_port, free_ports

CORPUS = [
    ("printer", "Third floor printer fault ZQX-4471",
     "When the display shows ZQX-4471, open tray two and remove the jammed sheet."),
    ("expenses", "Expense claims",
     "Submit receipts from business travel within thirty days to be paid back."),
    ("vpn", "Connecting to the office VPN",
     "Install the WireGuard client, import the profile, then sign in with SSO."),
    ("kafka", "Kafka consumer lag runbook",
     "If consumer lag grows, scale the consumer group and check partition skew."),
    ("salaries", "Salary bands",
     "Compensation bands per level, visible to people partners only."),
]
ACCESS = {"salaries": ("hr",)}
TYPES = {"kafka": "runbook", "vpn": "how-to"}


def make_chunk(doc_id: str, title: str, text: str, *, source: str = "kb",
               content_hash: str = "v1", index: int = 0) -> Chunk:
    return Chunk(chunk_id=f"{source}:{doc_id}:{index}", doc_id=doc_id, source=source,
                 title=title, text=text, content_hash=content_hash, chunk_index=index,
                 access=ACCESS.get(doc_id, ("public",)), doc_type=TYPES.get(doc_id, "policy"))


@pytest.fixture(params=["memory", "weaviate"])
def index(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return MemoryIndex()
    return request.getfixturevalue("weaviate_index")


@pytest.fixture
async def loaded(index: Any, embedder: LocalEmbedder) -> Any:
    chunks = [make_chunk(*row) for row in CORPUS]
    vectors = await embedder.embed_documents([f"{c.title}\n{c.text}" for c in chunks])
    await index.upsert(chunks, vectors)
    return index


async def _top(index: Any, embedder: LocalEmbedder, query: str, alpha: float, limit: int = 5,
               **kwargs: Any) -> list[str]:
    vector = await embedder.embed_query(query)
    hits = await index.search(query, vector, limit=limit, alpha=alpha, **kwargs)
    return [h.chunk.doc_id for h in hits]


async def test_upsert_is_idempotent_and_replaces(index: Any, embedder: LocalEmbedder) -> None:
    chunks = [make_chunk(*row) for row in CORPUS]
    vectors = await embedder.embed_documents([c.text for c in chunks])
    await index.upsert(chunks, vectors)
    await index.upsert(chunks, vectors)
    assert await index.count() == len(CORPUS)
    changed = make_chunk("vpn", "Connecting to the office VPN", "Use the new Tailscale client.",
                         content_hash="v2")
    await index.upsert([changed], await embedder.embed_documents([changed.text]))
    assert await index.count() == len(CORPUS)
    assert (await index.list_documents("kb"))["vpn"] == {"v2"}


async def test_delete_by_document_version_and_source(index: Any, embedder: LocalEmbedder) -> None:
    old = [make_chunk("doc", "Doc", f"old part {i}", index=i) for i in range(3)]
    new = [make_chunk("doc", "Doc", "new part", content_hash="v2")]
    other = [make_chunk("doc", "Doc", "same id, other source", source="wiki")]
    for group in (old, new, other):
        await index.upsert(group, await embedder.embed_documents([c.text for c in group]))
    # Chunk 0 was replaced by the new version; chunks 1-2 of the old version are stale.
    assert await index.delete_document("kb", "doc", keep_hash="v2") == 2
    assert await index.list_documents("kb") == {"doc": {"v2"}}
    assert await index.delete_document("kb", "doc") == 1
    assert await index.list_documents("kb") == {}
    assert await index.count("wiki") == 1
    assert await index.delete_source("wiki") == 1
    assert await index.count() == 0


async def test_keyword_only_match_is_found_by_bm25(loaded: Any, embedder: LocalEmbedder) -> None:
    assert (await _top(loaded, embedder, "ZQX-4471", alpha=0.0))[0] == "printer"


async def test_paraphrase_is_found_by_vectors(loaded: Any, embedder: LocalEmbedder) -> None:
    query = "how can I get reimbursed after a work trip?"
    assert (await _top(loaded, embedder, query, alpha=1.0))[0] == "expenses"
    assert (await _top(loaded, embedder, query, alpha=0.0))[:1] != ["expenses"]


async def test_hybrid_finds_both_kinds(loaded: Any, embedder: LocalEmbedder) -> None:
    assert "printer" in await _top(loaded, embedder, "ZQX-4471", alpha=0.5, limit=2)
    assert "expenses" in await _top(
        loaded, embedder, "how can I get reimbursed after a work trip?", alpha=0.5, limit=2)


async def test_filters_are_applied(loaded: Any, embedder: LocalEmbedder) -> None:
    public = await _top(loaded, embedder, "salary compensation bands", alpha=0.5,
                        filters=SearchFilters(access=("public",)))
    assert "salaries" not in public and public
    hr = await _top(loaded, embedder, "salary compensation bands", alpha=0.5,
                    filters=SearchFilters(access=("public", "hr")))
    assert hr[0] == "salaries"
    runbooks = await _top(loaded, embedder, "consumer lag VPN", alpha=0.5,
                          filters=SearchFilters(doc_types=("runbook",)))
    assert runbooks == ["kafka"]
    assert await _top(loaded, embedder, "VPN", alpha=0.5,
                      filters=SearchFilters(sources=("elsewhere",))) == []


# Weaviate-only behaviour: diversity, embedder identity, failures.

async def test_mmr_diversity_drops_near_duplicates(weaviate_index: WeaviateIndex,
                                                   embedder: LocalEmbedder) -> None:
    twins = [make_chunk(f"vpn{i}", "Connecting to the office VPN",
                        "Install the WireGuard client, import the profile, sign in with SSO.")
             for i in range(3)]
    distinct = [make_chunk("wifi", "Guest wireless",
                           "Visitors join the guest wireless with the lobby code.")]
    chunks = twins + distinct
    await weaviate_index.upsert(chunks, await embedder.embed_documents([c.text for c in chunks]))
    query = "connect to the office VPN with WireGuard"
    vector = await embedder.embed_query(query)
    plain = await weaviate_index.search(query, vector, limit=2, alpha=0.5)
    diverse = await weaviate_index.search(query, vector, limit=2, alpha=0.5,
                                          diversity=Diversity(balance=0.3))
    assert all(h.chunk.doc_id.startswith("vpn") for h in plain)
    assert {h.chunk.doc_id for h in diverse} & {"wifi"}


async def test_different_embedder_is_refused(weaviate_server: Any,
                                             weaviate_index: WeaviateIndex) -> None:
    other = WeaviateIndex(weaviate_index.config, "voyage:voyage-3.5", 1024)
    with pytest.raises(ConfigError) as caught:
        await other.connect()
    await other.close()
    assert "re-sync" in caught.value.user_message
    assert "local:all-MiniLM-L6-v2" in caught.value.user_message
    assert "SIFT_EMBEDDING__BACKEND" not in caught.value.user_message  # Voyage is configured


async def test_an_index_of_the_former_default_backend_is_refused_with_the_setting_to_keep_it(
        weaviate_server: Any) -> None:
    config = index_config(weaviate_server, unique_collection())
    built = WeaviateIndex(config, "local:all-MiniLM-L6-v2", 384)  # `openvino`, before int8
    await built.connect()
    default = WeaviateIndex(config, "local:all-MiniLM-L6-v2-static-int8-v3", 384)
    try:
        with pytest.raises(ConfigError) as caught:
            await default.connect()
    finally:
        await default.close()
        await built.drop()
        await built.close()
    assert caught.value.user_message.endswith(
        "re-sync with `sift sync --rebuild`, or set SIFT_EMBEDDING__BACKEND=openvino to keep "
        "answering from it.")


async def test_prose_is_searchable_but_only_ids_and_labels_are_filterable(
        weaviate_index: WeaviateIndex) -> None:
    c = weaviate_index.config
    async with httpx.AsyncClient() as http:
        reply = await http.get(f"{c.http_url}/v1/schema/{c.collection}",
                               headers={"Authorization": f"Bearer {c.api_key}"})
    reply.raise_for_status()
    stored = {p["name"]: p for p in reply.json()["properties"]}
    for prose in ("title", "section", "text"):
        assert stored[prose]["indexSearchable"] is True
        assert stored[prose]["indexFilterable"] is False  # a word index nobody filters on
    for label in ("access", "source", "doc_type", "tags", "doc_id", "content_hash"):
        assert stored[label]["indexFilterable"] is True  # what search filters and deletes use


async def test_rejected_objects_raise(weaviate_index: WeaviateIndex) -> None:
    chunk = make_chunk("bad", "Bad", "wrong vector length")
    good = make_chunk("good", "Good", "right length")
    await weaviate_index.upsert([good], [[0.1] * 384])
    with pytest.raises(RetrievalError, match="rejected 1 of 2 chunks: kb:bad:0"):
        await weaviate_index.upsert([good, chunk], [[0.2] * 384, [0.1] * 5])
    with pytest.raises(RetrievalError, match="vector dimensions do not match"):
        await weaviate_index.upsert([chunk], [[0.1] * 5])


async def test_unreachable_server_names_the_address() -> None:
    config = IndexConfig(http_url=f"http://127.0.0.1:{free_port()}",
                         grpc_url=f"127.0.0.1:{free_port()}", connect_timeout_s=2,
                         collection=unique_collection())
    index = WeaviateIndex(config, "x", 3)
    started = time.monotonic()
    with pytest.raises(RetrievalError) as caught:
        await index.connect()
    assert config.http_url in str(caught.value)
    assert time.monotonic() - started < 10


DEAD_SERVER_CALLS: dict[str, Callable[[WeaviateIndex], Awaitable[object]]] = {
    "search": lambda index: index.search("anything", [0.0] * 384, limit=3),
    "upsert": lambda index: index.upsert([make_chunk("vpn", "VPN", "text")], [[0.1] * 384]),
    "count": lambda index: index.count(),
    "list_documents": lambda index: index.list_documents("kb"),
}


async def _failure(call: Awaitable[object]) -> tuple[str, str, float]:
    started = time.monotonic()
    try:
        await call
    except Exception as exc:
        return type(exc).__name__, str(exc), time.monotonic() - started
    return "no error", "", time.monotonic() - started


@pytest.mark.slow
async def test_calls_after_server_died_fail_fast_naming_it(
        weaviate_server: ManagedWeaviate, tmp_path: Any, embedder: LocalEmbedder) -> None:
    server = ManagedWeaviate(weaviate_server.binary, tmp_path, free_ports())
    server.start()
    config = replace(index_config(server, unique_collection()), query_timeout_s=3,
                     insert_timeout_s=3)
    index = _CountingReadiness(config, embedder.name, embedder.dimension)
    try:
        await index.connect()
        for _ in range(3):
            assert await DEAD_SERVER_CALLS["search"](index) == []
        assert index.checks == 0  # a healthy search costs no readiness request
        server.stop()
        failures = {name: await _failure(call(index)) for name, call in DEAD_SERVER_CALLS.items()}
    finally:
        server.stop()
        await index.close()
    for name, (kind, message, seconds) in failures.items():
        assert kind == "RetrievalError", (name, kind, message)
        assert server.url in message, (name, message)
        assert seconds < 10, (name, seconds)
    assert index.checks >= 1  # the dead server's search was told apart by one


class _CountingReadiness(WeaviateIndex):
    """Counts readiness checks: the live index, observed rather than faked."""

    checks = 0

    async def is_ready(self) -> bool:
        self.checks += 1
        return await super().is_ready()
