"""One sync run of one source: skip unchanged, re-index changed, prune deleted; crash-safe."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence, Set
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import ParamSpec, TypeVar

from rag.errors import SyncError
from rag.logcontext import (
    bind_correlation_id,
    current_correlation_id,
    new_correlation_id,
    reset_correlation_id,
)
from rag.messages import with_reference
from rag.ports import Embedder
from rag.types import Chunk, Vector
from sync.chunk import ChunkingConfig
from sync.connectors.base import (
    Checkpoint,
    Connector,
    CursorSource,
    DocumentFailure,
    DocumentGone,
    Fetched,
    SourceDocument,
    fetcher,
)
from sync.interrupt import StopRequest, SyncInterrupted
from sync.ports import ChunkIndex, DocumentState, SyncState
from sync.prepare import content_hash, text_to_embed, to_chunks
from sync.report import NoProgress, Progress, SyncSummary, Timers
from sync.run_state import Pending, RunState

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
MAX_ERRORS_KEPT = 100
ID_PAGE = 5000  # record ids read at a time when a plain run looks for deleted documents


@dataclass(frozen=True)
class JobConfig:
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    embed_batch: int = 1024  # chunks per embedding call, gathered across documents
    # Documents changed shortly before the checkpoint are read again: clocks of the platform
    # and of this machine disagree a little, and re-reading an unchanged one costs a hash.
    checkpoint_overlap_s: float = 300.0
    max_file_bytes: int = 50 * 1024 * 1024  # larger documents are skipped, by name
    # Declared access groups ("public" included); None: do not check documents against them.
    known_groups: frozenset[str] | None = None
    # Principals the access resolver reads live from the platform (a Slack private channel's
    # current members), not from [[groups]]: known without being declared.
    live_principals: tuple[str, ...] = ()


class SyncJob:
    """Order of writes per changed document (what makes a kill -9 harmless): embed, upsert the
    new chunks, delete the document's chunks of other versions, then record its hash LAST.
    A rerun therefore finds any interrupted document still "changed" and redoes it."""

    def __init__(self, source: str, connector: Connector, index: ChunkIndex,
                 embedder: Embedder, state: SyncState, config: JobConfig | None = None,
                 progress: Progress | None = None, stop: StopRequest | None = None) -> None:
        self.stop = stop or StopRequest()
        self.source = source
        self.connector = connector
        self.index = index
        self.embedder = embedder
        self.state = state
        self.config = config or JobConfig()
        self.progress = progress or NoProgress()
        self.timers = Timers()

    async def run(self, *, full: bool = False, dry_run: bool = False) -> SyncSummary:
        token = bind_correlation_id(new_correlation_id())
        started = time.perf_counter()
        try:
            # No document on record (a source removed, then configured again): its last run
            # proves nothing is indexed, so this run reads everything, as a first one does.
            recorded = not full and await self._state(self.state.has_documents, self.source)
            since = await self._state(self.state.last_success, self.source) \
                if recorded else None
            run = RunState(full=full or since is None, dry_run=dry_run)
            if run.full:  # it reads every document: its records in one query, not one each
                run.known = await self._state(self.state.documents, self.source)
            run_id = None if dry_run else await self._state(
                self.state.start_run, self.source, full=run.full)
            try:
                await self._sync(run, since)
            except BaseException as exc:  # cancelled runs are recorded as failed too
                await run.writes.abandon(exc)
                await self._abort(run, run_id, exc)
                raise
            if run_id is not None:
                await self._state(self.state.finish_run, run_id, run.tally.freeze(),
                                  run.errors[:MAX_ERRORS_KEPT], status="ok", cursor=run.cursor)
            return self._summary(run, time.perf_counter() - started)
        except Exception as exc:
            raise self._failure(exc) from exc
        finally:
            reset_correlation_id(token)

    async def _sync(self, run: RunState, since: datetime | None) -> None:
        if run.full:  # a full pass also reconciles the index with what storage believes
            with self.timers.phase("write"):
                run.indexed = await self.index.list_documents(self.source)
        if since is not None:
            since = _aware(since) - timedelta(seconds=self.config.checkpoint_overlap_s)
        async for item in self.timers.iterate("read", await self._listing(run, since)):
            if isinstance(item, Checkpoint):
                self._checkpoint(run, item)
            else:
                await self._take(run, item)
        await self._flush(run)
        await run.writes.finish()
        if run.full or self.connector.cheap_ids or run.listed_all:  # else: the next full pass
            await self._prune(run)
        self._warn_groups(run)
        self._warn_empty(run)

    async def _listing(self, run: RunState, since: datetime | None) -> AsyncIterator[
            Fetched | Checkpoint]:
        """The connector's documents since the checkpoint time, or since its own cursor."""
        if not isinstance(self.connector, CursorSource):
            return self.connector.documents(since)
        cursor = None if run.full else await self._state(self.state.last_cursor, self.source)
        return self.connector.changes(cursor)

    def _checkpoint(self, run: RunState, item: Checkpoint) -> None:
        run.cursor, run.listed_all = item.cursor, item.complete
        for warning in item.warnings:
            log.warning("sync %s: %s", self.source, warning)
            run.warnings.append(warning)

    async def run_ids(self, doc_ids: Sequence[str]) -> SyncSummary:
        """Sync only these documents (a push named them) through the connector's `fetch`: no
        listing, no pruning, and no run recorded, so the incremental checkpoint stays where
        the last listing left it (a push never hides changes it did not name)."""
        targeted = fetcher(self.connector)
        if targeted is None:
            raise SyncError(f"the {self.source} connector cannot read documents by id")
        token = bind_correlation_id(new_correlation_id())
        started = time.perf_counter()
        try:
            run = RunState(full=False, dry_run=False)
            try:
                async for item in self.timers.iterate("read", targeted.fetch(doc_ids)):
                    await self._take(run, item)
                await self._flush(run)
                await run.writes.finish()
            except BaseException as exc:
                await run.writes.abandon(exc)
                raise
            self._warn_groups(run)
            return self._summary(run, time.perf_counter() - started)
        except Exception as exc:
            log.error("sync %s of %d pushed documents failed: %r", self.source, len(doc_ids),
                      exc, exc_info=exc)
            raise self._failure(exc) from exc
        finally:
            reset_correlation_id(token)

    def _warn_empty(self, run: RunState) -> None:
        """A full pass that found nothing at all is said, not finished in silence."""
        if not run.full or run.seen or run.errors or run.tally.failed:
            return
        hint = getattr(self.connector, "empty_hint", "") or \
            "check its path, URL or filters in sift.toml"
        warning = f"the source has no documents to index: {hint}"
        log.warning("sync %s: %s", self.source, warning)
        run.warnings.append(warning)

    def _warn_groups(self, run: RunState) -> None:
        for group, docs in sorted(run.unknown_groups.items()):
            more = f" and {len(docs) - 1} more" if len(docs) > 1 else ""
            warning = (f"access group {group!r} (used by {docs[0]}{more}) is not declared in "
                       "[[groups]]: what it restricts is visible to nobody until it is")
            log.warning("sync %s: %s", self.source, warning)
            run.warnings.append(warning)

    async def _take(self, run: RunState, item: Fetched) -> None:
        """One item of the connector's stream: a document, a failure, or a deletion."""
        if not item.doc_id:  # nothing to record it under (an API item without an id)
            await self._fail(run, DocumentFailure("", item.error if isinstance(
                item, DocumentFailure) else "a document without an id"), record=False)
        elif item.doc_id in run.seen:
            await self._fail(run, DocumentFailure(
                item.doc_id, f"duplicate doc_id {item.doc_id!r}: a document earlier in "
                "the source already uses it; this one is skipped"), record=False)
        elif isinstance(item, DocumentGone):
            run.seen.add(item.doc_id)
            await self._gone(run, item.doc_id)
        elif isinstance(item, DocumentFailure):
            run.seen.add(item.doc_id)
            await self._fail(run, item)
        else:
            run.seen.add(item.doc_id)
            await self._consider(run, item)
        if run.pending_chunks >= self.config.embed_batch:
            await self._flush(run)
        self.stop.check(self.source)

    def _check_access(self, run: RunState, doc: SourceDocument) -> None:
        """A bad `access` is indexed restricted (never public) and reported, not skipped."""
        for warning in doc.warnings:
            log.warning("sync %s: %s: %s", self.source, doc.doc_id, warning)
            run.warnings.append(f"{doc.doc_id}: {warning}")
        known = self.config.known_groups
        if known is None:
            return
        for group in doc.access:
            if group not in known and not group.startswith(self.config.live_principals):
                run.unknown_groups.setdefault(group, []).append(doc.doc_id)

    async def _consider(self, run: RunState, doc: SourceDocument) -> None:
        size = len(doc.body.encode("utf-8"))
        if size > self.config.max_file_bytes:
            limit = self.config.max_file_bytes / 2**20
            await self._fail(run, DocumentFailure(doc.doc_id, (
                f"{doc.doc_id} is {size / 2**20:.1f} MB, over the {limit:g} MB limit "
                "(SIFT_SYNC__MAX_FILE_MB): skipped")))
            return
        self._check_access(run, doc)
        with self.timers.phase("chunk"):
            digest = content_hash(doc, self.config.chunking)
        old = await self._known(run, doc.doc_id)
        if old is not None and self._up_to_date(run, old, digest):
            run.tally.unchanged += 1
            self.progress.documents(1)
            restricted = "public" not in doc.access
            # Rows from before 0006 (restricted) and 0015 (warning) say less than this run.
            if (old.restricted, old.warning) != (restricted, _warning(doc)):
                await self._state(self.state.record_document, self.source, doc.doc_id,
                                  content_hash=digest, chunk_count=old.chunk_count,
                                  updated_at=doc.updated_at, restricted=restricted,
                                  warning=_warning(doc))
            return
        with self.timers.phase("chunk"):
            every = to_chunks(self.source, doc, digest, self.config.chunking)
        chunks = await self._not_yet_written(run, doc.doc_id, digest, every)
        existed = bool(old and old.content_hash) or doc.doc_id in run.indexed
        run.pending.append(Pending(doc, digest, chunks, "updated" if existed else "added",
                                   chunk_count=len(every)))

    async def _not_yet_written(self, run: RunState, doc_id: str, digest: str,
                               chunks: list[Chunk]) -> list[Chunk]:
        """A document longer than one embedding batch may have been stopped half-way (Ctrl-C,
        a deploy): the chunks of this very version that reached the index are not embedded
        again. A shorter one is one batch, written whole or not at all: no lookup for it."""
        if run.dry_run or len(chunks) <= self.config.embed_batch:
            return chunks
        with self.timers.phase("write"):
            done = await self.index.chunk_ids(self.source, doc_id, digest)
        if not done:
            return chunks
        log.info("sync %s: %s: %d of its %d chunks were written by a run that stopped; "
                 "embedding the other %d", self.source, doc_id, len(done), len(chunks),
                 len(chunks) - len(done))
        return [c for c in chunks if c.chunk_id not in done]

    @staticmethod
    def _up_to_date(run: RunState, old: DocumentState, digest: str) -> bool:
        if old.status != "ok" or old.content_hash != digest:
            return False
        if not run.full:
            return True
        expected = {digest} if old.chunk_count else set()
        return run.indexed.get(old.doc_id, set()) == expected

    async def _flush(self, run: RunState) -> None:
        batch, run.pending = run.pending, []
        if not batch:
            return
        if run.dry_run:
            for item in batch:
                setattr(run.tally, item.kind, getattr(run.tally, item.kind) + 1)
                run.tally.chunks_written += len(item.chunks)
            self.progress.documents(len(batch))
            return
        chunks = [c for item in batch for c in item.chunks]
        if not chunks:  # nothing left to embed (a resumed document): record the batch now
            for item in batch:
                await self._commit(run, item)
            return
        size = self.config.embed_batch
        for start in range(0, len(chunks), size):  # bounded memory, even for one huge document
            part = chunks[start:start + size]
            with self.timers.phase("embed"):  # while the part before this one is written
                vectors = await self.embedder.embed_documents([text_to_embed(c) for c in part])
            run.embedded += len(part)
            done = start + len(part)
            await run.writes.start(self._write(run, part, vectors,
                                               batch if done == len(chunks) else []))
            if len(chunks) > size:
                log.info("sync %s: %s: %d/%d chunks embedded", self.source,
                         chunks[done - 1].doc_id, done, len(chunks))
            # Stop between batches; documents not committed yet are redone by the next run.
            self.stop.check(self.source)

    async def _write(self, run: RunState, chunks: list[Chunk], vectors: list[Vector],
                     documents: list[Pending]) -> None:
        """Upsert chunks; then, once a batch's last part is in, record its documents."""
        with self.timers.phase("write"):
            await self.index.upsert(chunks, vectors)
        self.progress.chunks(len(chunks))
        for item in documents:
            await self._commit(run, item)

    async def _commit(self, run: RunState, item: Pending) -> None:
        doc = item.doc
        maybe_stale = not run.full or doc.doc_id in run.known or doc.doc_id in run.indexed
        if maybe_stale:  # chunks of older versions, or of a run killed before its record
            with self.timers.phase("write"):
                await self.index.delete_document(self.source, doc.doc_id, keep_hash=item.digest)
        await self._state(self.state.record_document, self.source, doc.doc_id,
                          content_hash=item.digest, chunk_count=item.total_chunks,
                          updated_at=doc.updated_at, restricted="public" not in doc.access,
                          warning=_warning(doc))
        setattr(run.tally, item.kind, getattr(run.tally, item.kind) + 1)
        run.tally.chunks_written += len(item.chunks)
        self.progress.documents(1)

    async def _fail(self, run: RunState, failure: DocumentFailure, record: bool = True) -> None:
        """Report and skip; the document's existing chunks and hash stay as they were."""
        said = failure.error if "skipped" in failure.error or "not read" in failure.error \
            else f"{failure.error}; skipped"
        log.warning("sync %s: %s", self.source, said)
        run.tally.failed += 1
        run.errors.append(failure.error)
        self.progress.documents(1)
        if run.dry_run or not record:
            return
        old = await self._known(run, failure.doc_id)
        await self._state(self.state.record_document, self.source, failure.doc_id,
                          content_hash=old.content_hash if old else "",
                          chunk_count=old.chunk_count if old else 0, updated_at=None,
                          status="failed", error=failure.error, restricted=True)

    async def _gone(self, run: RunState, doc_id: str) -> None:
        """Deleted at the source: its chunks and its record go now, not at the next prune."""
        recorded = await self._known(run, doc_id) is not None
        run.tally.deleted += int(recorded or doc_id in run.indexed)
        self.progress.documents(1)
        if run.dry_run:
            return
        with self.timers.phase("write"):  # even unrecorded: chunks of a run killed mid-way
            await self.index.delete_document(self.source, doc_id)
        if recorded:
            await self._state(self.state.forget_document, self.source, doc_id)

    async def _known(self, run: RunState, doc_id: str) -> DocumentState | None:
        """The document's record: from those a full run read at its start, else looked up
        (a plain run reads the records of the few documents it lists, not all of them)."""
        if run.full:
            return run.known.get(doc_id)
        return await self._state(self.state.document, self.source, doc_id)

    async def _prune(self, run: RunState) -> None:
        """Delete documents the source no longer has (its own listing is the authority).
        A listing that fails raises before anything is deleted."""
        listed: Set[str] = set()
        if not run.listed_all:  # else this run's listing was already complete
            with self.timers.phase("read"):
                listed = await self.connector.list_ids()
        for doc_id in sorted(await self._unlisted(run, listed)):
            run.tally.deleted += 1
            if run.dry_run:
                continue
            with self.timers.phase("write"):
                await self.index.delete_document(self.source, doc_id)
            await self._state(self.state.forget_document, self.source, doc_id)

    async def _unlisted(self, run: RunState, listed: Set[str]) -> set[str]:
        """Documents on record or in the index that neither this run nor `listed` named. A
        plain run reads the records' ids a page at a time: memory for the few gone, not for
        every document of the source."""
        def gone(doc_id: str) -> bool:
            return doc_id not in listed and doc_id not in run.seen

        found = {d for d in run.indexed if gone(d)}
        if run.full:
            return found | {d for d in run.known if gone(d)}
        after = ""
        while page := await self._state(self.state.document_ids, self.source, after=after,
                                        limit=ID_PAGE):
            found.update(d for d in page if gone(d))
            after = page[-1]
        return found

    async def _state(self, call: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Storage calls block; keep them off the event loop that also serves chat."""
        with self.timers.phase("state"):
            return await asyncio.to_thread(call, *args, **kwargs)

    async def _abort(self, run: RunState, run_id: int | None, exc: BaseException) -> None:
        if isinstance(exc, SyncInterrupted):
            log.warning("sync %s stopped at a batch boundary (%s)", self.source, self.stop.reason)
        elif isinstance(exc, asyncio.CancelledError):  # `sift serve` stopping: not a fault
            log.warning("sync %s stopped because Sift is shutting down; the next run syncs "
                        "what it had not recorded yet", self.source)
        else:
            log.error("sync %s failed: %r", self.source, exc, exc_info=exc)
        if run_id is None:
            return
        errors = [*run.errors[:MAX_ERRORS_KEPT], f"run aborted: {exc}"]
        status = "interrupted" if isinstance(exc, SyncInterrupted) else "failed"
        try:
            await self._state(self.state.finish_run, run_id, run.tally.freeze(), errors,
                              status=status)
        except Exception:  # the original failure matters more than its bookkeeping
            log.exception("sync %s: could not record the failed run", self.source)

    def _failure(self, exc: BaseException) -> SyncError:
        if isinstance(exc, SyncError):
            return exc
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        sentence = f"The sync of '{self.source}' stopped: {cause}"
        return SyncError(f"sync of {self.source} failed: {exc!r}",
                         user_message=with_reference(sentence, current_correlation_id()))

    def _summary(self, run: RunState, seconds: float) -> SyncSummary:
        return SyncSummary(self.source, run.tally.freeze(), seconds, full=run.full,
                           dry_run=run.dry_run, errors=tuple(run.errors),
                           phases=dict(self.timers.seconds), chunks_embedded=run.embedded,
                           warnings=tuple(run.warnings))


def _warning(doc: SourceDocument) -> str:
    return "; ".join(doc.warnings)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)
