"""Sync at scale: 100,000 pages of a fake Confluence Cloud, re-synced unchanged and after deletions.

Run:  .venv/bin/python -m bench.sync_scale [--pages 100000] [--delete 1000] [--spaces 4]
                                           [--tree OTHER_CHECKOUT ...] [--first-in CHECKOUT]

A fake Confluence Cloud (tests/fakes/confluence_server.py, REST v2: spaces, each space's pages
by cursor at the documented maximum of 250 a request, per-page labels and read restrictions)
holds `--pages` generated pages in `--spaces` spaces, in a process of its own, and counts the
requests it serves by endpoint. `--first-in` (default: this checkout) makes the first sync (with
`--first seed`, writes what it would in bulk: see `seed`, for sizes whose first sync would take
half an hour on a small machine, at two requests per page); then
each checkout (this one first, then every --tree, e.g. `git archive` of main before a change)
starts from a copy of what it wrote and runs, each in a fresh process:
  1. a plain (incremental) sync with nothing changed at the fake;
  2. a plain sync after `--delete` pages were deleted at the fake (spread over the spaces);
reporting wall time, peak RSS of the process and its RSS just before the run (so the run's own
growth shows), requests by endpoint, the run's tally, and whether exactly the deleted pages left
the index and the sync state. The fake is restored between checkouts.

What is real: the connector and the sync job of each checkout, HTTP over loopback to the fake
(httpx on Sift's side, aiohttp on the fake's), the sync state in a SQLite file through storage's
repository, the production chunking. What is not: the embedder (16 numbers from a hash of the
text) and the index (chunk ids and content hashes per document in a dict, pickled between
processes; no vectors, no Weaviate), so the first sync's time is the connector's, the
chunking's and the state's, not a model's.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import multiprocessing
import pickle
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.trees import measure_in

ROOT = Path(__file__).resolve().parents[1]
SPACES = ("ENG", "OPS", "HR", "DOCS", "SALES", "LEGAL", "IT", "FIN")
SOURCE = "wiki"


# ---- the fake, in its own process ---------------------------------------------------------

def _endpoint(path_qs: str) -> str:
    path = path_qs.split("?", 1)[0]
    if path.endswith("/restriction/byOperation/read"):
        return "restrictions (a page)"
    if path.endswith("/labels"):
        return "labels (a page)"
    if path.endswith("/pages") and "/spaces/" in path:
        return "listing, bodies" if "body-format=storage" in path_qs else "listing, ids"
    if "/api/v2/pages/" in path:
        return "page by id"
    return "spaces" if path.endswith("/spaces") else path


def _serve_fake(pages: int, spaces: Sequence[str], queue: Any) -> None:
    from aiohttp import web

    from tests.fakes.confluence_server import FakeConfluence

    async def serve() -> None:
        fake = FakeConfluence()
        ids = fake.generate(pages, spaces)
        removed: dict[str, Any] = {}

        async def counts(request: web.Request) -> web.Response:
            found = Counter(_endpoint(p) for p in fake.requests)
            fake.requests.clear()
            return web.json_response(dict(found))

        async def delete(request: web.Request) -> web.Response:
            count = int(request.query["n"])
            doomed = ids[:: max(1, len(ids) // count)][:count]
            for page_id in doomed:
                removed[page_id] = fake.pages.pop(page_id)
            return web.json_response(doomed)

        async def restore(request: web.Request) -> web.Response:
            for page in removed.values():
                fake.put(page)
            removed.clear()
            return web.json_response(len(fake.pages))

        fake.app.router.add_get("/_bench/counts", counts)
        fake.app.router.add_post("/_bench/delete", delete)
        fake.app.router.add_post("/_bench/restore", restore)
        await fake.start()
        queue.put(fake.url)
        await asyncio.Event().wait()

    asyncio.run(serve())


def _control(url: str, path: str, method: str = "GET") -> Any:
    import httpx

    return httpx.request(method, url + path, timeout=60).json()


# ---- one run, in a fresh process on one checkout's code ------------------------------------

class DocIndex:
    """The index's writing side, kept small: chunk id -> content hash per document."""

    def __init__(self) -> None:
        self.docs: dict[str, dict[str, str]] = {}
        self.vectors = 0

    async def upsert(self, chunks: Sequence[Any], vectors: Sequence[Any]) -> int:
        for chunk in chunks:
            self.docs.setdefault(chunk.doc_id, {})[chunk.chunk_id] = chunk.content_hash
        self.vectors += len(vectors)
        return len(chunks)

    async def delete_document(self, source: str, doc_id: str, keep_hash: str = "") -> int:
        chunks = self.docs.get(doc_id, {})
        doomed = [c for c, h in chunks.items() if not keep_hash or h != keep_hash]
        for chunk_id in doomed:
            del chunks[chunk_id]
        if not chunks:
            self.docs.pop(doc_id, None)
        return len(doomed)

    async def delete_source(self, source: str) -> int:
        count = sum(len(c) for c in self.docs.values())
        self.docs.clear()
        return count

    async def list_documents(self, source: str) -> dict[str, set[str]]:
        return {d: set(c.values()) for d, c in self.docs.items()}

    async def chunk_ids(self, source: str, doc_id: str, content_hash: str) -> set[str]:
        return {c for c, h in self.docs.get(doc_id, {}).items() if h == content_hash}

    async def count_by_source(self) -> dict[str, int]:
        return {SOURCE: sum(len(c) for c in self.docs.values())}


class HashVectors:
    """Instant vectors (not a model): the sync's own costs, without the embedding's."""

    name, dimension = "bench-hash", 16

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[b / 255 for b in hashlib.sha256(t.encode()).digest()[:16]] for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return (await self.embed_documents([text]))[0]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def seed(connector: Any, job: Any, db: Any) -> Any:
    """What a first sync leaves, written in bulk: each page from the listing with bodies (250
    a request) through the connector's own conversion, hash and chunking, minus the two
    requests per page for labels and restrictions (the generated pages have neither, which is
    what those requests would say) and minus the state's one transaction per page."""
    from dataclasses import replace

    from sqlalchemy import insert

    from storage.models import SourceDocument, table
    from sync.ports import RunCounts
    from sync.prepare import content_hash, to_chunks

    state, index, chunking = job.state, job.index, job.config.chunking
    run_id = state.start_run(SOURCE, full=True)
    now, rows = time.time(), []
    async with connector._api() as api:
        spaces, _ = await connector._spaces(api)
        for space in spaces:
            async for page in api.pages(space, None, body=True):
                doc = connector._document(replace(page, labels=(), readers=()))
                digest = content_hash(doc, chunking)
                chunks = to_chunks(SOURCE, doc, digest, chunking)
                index.docs[doc.doc_id] = {c.chunk_id: digest for c in chunks}
                rows.append({"source": SOURCE, "doc_id": doc.doc_id, "content_hash": digest,
                             "chunk_count": len(chunks), "updated_at": doc.updated_at,
                             "last_synced": state._clock(), "status": "ok", "error": "",
                             "restricted": "public" not in doc.access, "warning": ""})
    with db.write() as session:
        session.execute(insert(table(SourceDocument)), rows)
    state.finish_run(run_id, RunCounts(added=len(rows), chunks_written=sum(
        len(d) for d in index.docs.values())), [], status="ok")
    return time.time() - now, RunCounts(added=len(rows))


def _state_ids(db: Any) -> set[str]:
    from sqlalchemy import select

    from storage.models import SourceDocument

    with db.read() as session:
        return set(session.scalars(select(SourceDocument.doc_id).where(
            SourceDocument.source == SOURCE)))


def child(url: str, workdir: Path, spaces: list[str], expect: Path | None,
          seeding: bool = False) -> dict[str, Any]:
    from storage.db import Database
    from storage.sync_state import SyncStateRepository
    from sync.connectors.base import SourceConfig
    from sync.connectors.confluence import ConfluenceConnector, ConfluenceSettings
    from sync.job import JobConfig, SyncJob
    from sync.report import SyncSummary
    from tests.fakes.confluence_server import EMAIL, TOKEN

    db = Database(f"sqlite:///{workdir / 'sift.db'}")
    db.upgrade()
    state = SyncStateRepository(db)
    stored = workdir / "index.pickle"
    index = pickle.loads(stored.read_bytes()) if stored.exists() else DocIndex()
    # The ids alone: a checkout's whole records read here would leave freed memory that its
    # run could reuse unseen by the RSS figures.
    before = {"index": set(index.docs), "state": _state_ids(db)}
    gc.collect()
    connector = ConfluenceConnector(
        SourceConfig(SOURCE, url=f"{url}/wiki", token=TOKEN),
        ConfluenceSettings(deployment="cloud", email=EMAIL, spaces=spaces, page_size=250))
    job = SyncJob(SOURCE, connector, index, HashVectors(), state, JobConfig())
    rss_before = _rss_mb()
    started = time.perf_counter()
    if seeding:
        _, counts = asyncio.run(seed(connector, job, db))
        summary = SyncSummary(SOURCE, counts, 0.0, full=True)
    else:
        summary = asyncio.run(job.run())
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    after = {"index": set(index.docs), "state": _state_ids(db)}
    if not stored.exists():
        stored.write_bytes(pickle.dumps(index))
    result: dict[str, Any] = {
        "wall_s": wall, "peak_rss_mb": peak, "rss_before_mb": rss_before,
        "full": summary.full, "tally": asdict(summary.counts),
        "index_docs": len(after["index"]), "state_docs": len(after["state"]),
        "errors": list(summary.errors)[:3]}
    if expect is not None:
        gone = set(json.loads(expect.read_text()))
        for where in ("index", "state"):
            removed = before[where] - after[where]
            result[f"{where}_removed_as_deleted"] = len(removed & gone)
            result[f"{where}_removed_otherwise"] = len(removed - gone)
    return result


# ---- the parent: orchestrates and reports --------------------------------------------------

def _measure(tree: Path, url: str, workdir: Path, spaces: list[str],
             expect: Path | None = None, seeding: bool = False) -> dict[str, Any]:
    args = ["--child", url, "--workdir", str(workdir), "--spaces", ",".join(spaces)]
    if expect is not None:
        args += ["--expect", str(expect)]
    if seeding:
        args.append("--seed")
    found: dict[str, Any] = measure_in(tree, __file__, *args)
    found["requests"] = _control(url, "/_bench/counts")
    return found


def _row(label: str, r: dict[str, Any]) -> str:
    requests = ", ".join(f"{k} {v:,}" for k, v in sorted(r["requests"].items()))
    tally = r["tally"]
    moved = ", ".join(f"{k} {v:,}" for k, v in tally.items() if v)
    extra = ""
    if "index_removed_as_deleted" in r:
        extra = (f"; removed as deleted: index {r['index_removed_as_deleted']:,}, state "
                 f"{r['state_removed_as_deleted']:,}; removed otherwise: index "
                 f"{r['index_removed_otherwise']:,}, state {r['state_removed_otherwise']:,}")
    return (f"| {label} | {r['wall_s']:.1f} s | {r['peak_rss_mb']:.0f} MB "
            f"(+{r['peak_rss_mb'] - r['rss_before_mb']:.0f}) | {sum(r['requests'].values()):,}"
            f" ({requests}) | {moved or '–'}{extra} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--delete", type=int, default=1_000)
    parser.add_argument("--spaces", default="4", help="how many spaces (the child: their keys)")
    parser.add_argument("--tree", action="append", type=Path, default=[],
                        help="another checkout to measure beside this one (e.g. main before)")
    parser.add_argument("--first-in", type=Path, default=ROOT,
                        help="the checkout whose code makes the first sync")
    parser.add_argument("--first", choices=("sync", "seed"), default="sync",
                        help="seed: write what the first sync would, in bulk (see seed())")
    parser.add_argument("--seed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)  # the fake's URL: one run
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.workdir, args.spaces.split(","), args.expect,
                               args.seed)))
        return
    spaces = list(SPACES[:int(args.spaces)])
    queue: multiprocessing.SimpleQueue[Any] = multiprocessing.SimpleQueue()
    fake = multiprocessing.Process(target=_serve_fake, args=(args.pages, spaces, queue),
                                   daemon=True)
    fake.start()
    url = queue.get()
    trees = [ROOT, *(t.resolve() for t in args.tree)]
    rows: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="sift-sync-scale-") as scratch:
            first = Path(scratch) / "first"
            first.mkdir()
            what = "first sync" if args.first == "sync" else "seeded, not synced"
            print(f"{what}: {args.pages:,} pages by {args.first_in}", file=sys.stderr)
            rows.append(_row(f"{what} ({args.first_in.resolve().name})", _measure(
                args.first_in.resolve(), url, first, spaces, seeding=args.first == "seed")))
            for n, tree in enumerate(trees):
                work = Path(scratch) / f"tree{n}"
                shutil.copytree(first, work)
                print(f"{tree}: unchanged re-sync", file=sys.stderr)
                rows.append(_row(f"unchanged re-sync ({tree.name})",
                                 _measure(tree, url, work, spaces)))
                gone = _control(url, f"/_bench/delete?n={args.delete}", "POST")
                expect = Path(scratch) / "gone.json"
                expect.write_text(json.dumps(gone))
                print(f"{tree}: plain sync after {len(gone):,} deletions", file=sys.stderr)
                rows.append(_row(f"after {len(gone):,} deletions ({tree.name})",
                                 _measure(tree, url, work, spaces, expect)))
                _control(url, "/_bench/restore", "POST")
    finally:
        fake.terminate()
    print(f"{args.pages:,} pages in {len(spaces)} spaces, fake Confluence Cloud, page size 250")
    print("| run (checkout) | wall | peak RSS (+ during the run) | requests (by endpoint) "
          "| tally |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
