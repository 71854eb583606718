"""The connector contract every kind in sync/connectors/registry.py runs against its fake."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from rag.errors import SiftError
from sync.connectors.base import (
    Connector,
    CursorSource,
    DocumentGone,
    Fetched,
    SourceConfig,
    SourceDocument,
    fetcher,
)
from sync.connectors.registry import SPECS
from sync.job import JobConfig, SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder


@dataclass(frozen=True)
class Seen:
    """One seeded document as the listing must show it: its title, URL and a line of its text."""

    title: str
    url: str
    text: str


@dataclass(frozen=True)
class Trouble:
    """A way to spoil one run: `apply` changes the fake, `table` and `source` change the source's
    settings; the sentence must name `names` and never `secret`."""

    names: tuple[str, ...]
    apply: Callable[[], None] = lambda: None
    table: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)  # SourceConfig fields (token, url, path)
    secret: str = ""


@dataclass(frozen=True)
class Rig:
    """A connector's fake, seeded, and what the contract needs to know about it."""

    source: SourceConfig
    table: dict[str, Any]  # the source's `[sources.<kind>]` table
    ids: frozenset[str]  # every document the fake holds that the connector should list
    seen: dict[str, Seen]  # a few of them, in detail
    public: str | None  # a document anyone may read; None: the platform has none (Teams
    # channels are their team's or their members')
    restricted: tuple[str, frozenset[str]] | None  # a document and its principals; None: the
    # platform has no permissions (a website): every document is public
    remove: Callable[[], str]  # deletes one document at the fake, returns its id
    bad_credential: Trouble  # the run stops: one sentence naming the setting
    unreadable: Trouble  # one document fails, named; the others sync
    known_groups: frozenset[str] = frozenset({"public"})
    live_principals: tuple[str, ...] = ()  # prefixes checked live (Slack channels' members)


class ConnectorContract:
    """Subclass as `TestXContract`, set `kind` and give a `rig` fixture (its fake running)."""

    kind: ClassVar[str]

    @pytest.fixture
    def rig(self) -> Rig:
        raise NotImplementedError

    def build(self, rig: Rig, fault: Trouble | None = None) -> Connector:
        """The connector as `sift` builds it: the registry's spec, its settings model."""
        spec = SPECS[self.kind]
        source = dataclasses.replace(rig.source, **(fault.source if fault else {}))
        return spec.build(source, spec.settings(**{**rig.table, **(fault.table if fault else {})}))

    def job(self, rig: Rig, connector: Connector | None = None,
            index: MemoryIndex | None = None, state: MemorySyncState | None = None) -> SyncJob:
        return SyncJob(rig.source.name, connector or self.build(rig), index or MemoryIndex(),
                       HashEmbedder(), state or MemorySyncState(),
                       JobConfig(known_groups=rig.known_groups, checkpoint_overlap_s=0,
                                 live_principals=rig.live_principals))

    async def test_the_listing_names_every_document_with_title_and_url(self, rig: Rig) -> None:
        connector = self.build(rig)
        docs = await listed(connector)
        assert set(docs) == rig.ids
        assert await connector.list_ids() >= rig.ids
        for doc_id, seen in rig.seen.items():
            assert (docs[doc_id].title, docs[doc_id].url) == (seen.title, seen.url), docs[doc_id]
        assert all(d.title.strip() and d.url.startswith("http") for d in docs.values())

    async def test_the_text_arrives_in_the_index(self, rig: Rig) -> None:
        index = MemoryIndex()
        summary = await self.job(rig, index=index).run(full=True)
        assert (summary.counts.added, summary.counts.failed) == (len(rig.ids), 0)
        for doc_id, seen in rig.seen.items():
            text = " ".join(c.text for c, _ in index.chunks.values() if c.doc_id == doc_id)
            assert seen.text in text
        reader = fetcher(self.build(rig))
        if reader is not None:  # a push names documents: reading them by id gives the same
            picked = sorted(rig.seen)
            found = [d async for d in reader.fetch(picked)]
            docs = await listed(self.build(rig))
            assert [(d.doc_id, getattr(d, "body", None)) for d in found] == [
                (k, docs[k].body) for k in picked]

    async def test_a_document_deleted_at_the_platform_leaves_on_the_next_full_pass(
            self, rig: Rig) -> None:
        index, state = MemoryIndex(), MemorySyncState()
        await self.job(rig, index=index, state=state).run(full=True)
        gone = rig.remove()
        summary = await self.job(rig, index=index, state=state).run(full=True)
        assert (summary.counts.deleted, summary.counts.failed) == (1, 0)
        assert set(await index.list_documents(rig.source.name)) == rig.ids - {gone}
        reader = fetcher(self.build(rig))
        if reader is not None:  # a push naming it: the platform says it is gone
            assert [d async for d in reader.fetch([gone])] == [DocumentGone(gone)]

    async def test_an_ordinary_run_prunes_exactly_when_the_platform_can_say_so(
            self, rig: Rig) -> None:
        """A cheap id listing or the platform's change cursor: the next run removes it; else
        the document stays until the full pass (ARCHITECTURE's `cheap_ids`)."""
        connector = self.build(rig)
        says = connector.cheap_ids or isinstance(connector, CursorSource)
        index, state = MemoryIndex(), MemorySyncState()
        await self.job(rig, index=index, state=state).run(full=True)
        gone = rig.remove()
        summary = await self.job(rig, index=index, state=state).run()
        assert (summary.full, summary.counts.deleted) == (False, int(says))
        assert (gone in await index.list_documents(rig.source.name)) == (not says)

    async def test_a_restricted_document_carries_its_principals(self, rig: Rig) -> None:
        docs = await listed(self.build(rig))
        if rig.public is None:
            assert all("public" not in d.access for d in docs.values())
        else:
            assert docs[rig.public].access == ("public",)
        if rig.restricted is None:  # no permissions on the platform: nothing is restricted
            assert {d.access for d in docs.values()} == {("public",)}
            return
        doc_id, principals = rig.restricted
        assert set(docs[doc_id].access) == principals and "public" not in principals

    async def test_a_bad_credential_is_one_sentence_naming_the_setting(self, rig: Rig) -> None:
        fault = rig.bad_credential
        fault.apply()
        index, state = MemoryIndex(), MemorySyncState()
        with pytest.raises(SiftError) as caught:  # at build (ConfigError) or at the first call
            await self.job(rig, self.build(rig, fault), index, state).run(full=True)
        message = caught.value.user_message
        assert "\n" not in message and all(name in message for name in fault.names), message
        assert not fault.secret or fault.secret not in message
        assert await index.list_documents(rig.source.name) == {} and state.docs == {}

    async def test_an_unreadable_document_is_named_and_the_rest_syncs(self, rig: Rig) -> None:
        fault = rig.unreadable
        fault.apply()
        index = MemoryIndex()
        summary = await self.job(rig, self.build(rig, fault), index).run(full=True)
        [error] = summary.errors
        assert "\n" not in error and all(name in error for name in fault.names), error
        assert summary.counts.failed == 1  # counted, not only said
        indexed = set(await index.list_documents(rig.source.name))
        assert len(indexed) == summary.counts.added >= len(rig.ids) - 1 > 0
        assert indexed <= rig.ids


async def listed(connector: Connector) -> dict[str, SourceDocument]:
    items: list[Fetched] = [d async for d in connector.documents(None)]
    return {d.doc_id: d for d in items if isinstance(d, SourceDocument)}
