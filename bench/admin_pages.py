"""Server time per admin-console page with 100,000 interactions in a real PostgreSQL.

Run:  PYTHONPATH=. python -m bench.admin_pages [--interactions N] [--tree OTHER_CHECKOUT ...]

Seeds a throwaway PostgreSQL once, then serves the console of this checkout (and of each
--tree, side by side on the same data) in a fresh process and times every page: its first
view after start-up and the median of --rounds later views, from the router to the last byte.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import text

from bot.admin.routes import mount
from bot.settings import Settings
from rag.embed import LocalEmbedder
from storage.db import Database
from tests.pg import ENV_URL, Cluster, _bin_dir

ROOT = Path(__file__).resolve().parent.parent

PAGES = ["/admin/", "/admin/?window=7d", "/admin/questions", "/admin/questions?status=no_answer",
         "/admin/questions?q=vpn", "/admin/questions?vote=down&channel=%23team-3",
         "/admin/questions?doc=d17", "/admin/questions/{middle}", "/admin/gaps",
         "/admin/documents", "/admin/documents?view=never", "/admin/documents?view=down",
         "/admin/sources", "/admin/evaluation", "/admin/channels"]
PASSWORD = "bench"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def timing(times: dict[str, list[float]]) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Server time per request: from the router to the last byte of the rendered page."""

    @web.middleware
    async def measure(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        response = await handler(request)
        times.setdefault(request.path_qs, []).append((time.perf_counter() - started) * 1000)
        return response

    return measure


async def measure(url: str, rounds: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    db = Database(url)
    with db.read() as session:
        middle = int(session.scalar(text("SELECT max(id) FROM interactions")) or 0) // 2
    pages = [p.format(middle=middle) for p in PAGES]
    times: dict[str, list[float]] = {}
    root = web.Application(middlewares=[timing(times)])
    settings = Settings(admin={"password": PASSWORD},
                        sources=[{"name": "handbook", "kind": "folder", "path": "."}])
    embedder = LocalEmbedder()
    await embedder.embed_query("warm-up")  # `sift serve` loads the model before serving
    sub = mount(root, db, settings, embedder, None)
    async with TestClient(TestServer(root)) as client:
        await _catch_up(sub)
        page = await (await client.get("/admin/login")).text()
        token = re.search(r'name="csrf" value="([^"]+)"', page)
        assert token is not None
        await client.post("/admin/login", data={"csrf": token.group(1), "password": PASSWORD})
        for path in pages:
            response = await client.get(path)
            assert response.status == 200, (path, response.status)
        first = {path: samples[0] for path, samples in times.items()}
        times.clear()
        for _ in range(rounds):
            for path in pages:
                await (await client.get(path)).read()
    db.dispose()
    return times, first


async def _catch_up(sub: web.Application | None) -> None:
    """Where the console embeds gap questions in the background (as `sift serve` does from
    start-up), let it finish its first pass, as on a server that has run a few seconds."""
    gaps = importlib.import_module("bot.admin.gaps")
    indexer = getattr(gaps, "INDEXER", None)
    if sub is not None and indexer is not None:
        started = time.perf_counter()
        done = await sub[indexer].catch_up()
        print(f"gap questions embedded {time.perf_counter() - started:.1f}s after start-up "
              f"({done} left for this pass)", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--interactions", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=30, help="spread over this many days")
    parser.add_argument("--rounds", type=int, default=5, help="timed views per page")
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="another checkout to measure on the same data (repeatable)")
    parser.add_argument("--measure", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # the child process: measure, print JSON
        times, first = asyncio.run(measure(args.measure, args.rounds))
        print(json.dumps({"times": times, "first": first}))
        return
    from tests.admin.seed import seed  # the parent seeds with this checkout's schema
    cluster = None
    url = os.environ.get(ENV_URL)
    if not url:
        bin_dir = _bin_dir()
        if bin_dir is None:
            raise SystemExit("No PostgreSQL server: apt-get install postgresql, or set "
                             f"{ENV_URL}.")
        cluster = Cluster(bin_dir)
        url = cluster.start()
    try:
        db = Database(url)
        db.upgrade()
        started = time.perf_counter()
        seed(db, args.interactions, days=args.days, docs=2000)
        with db.write() as session:
            session.execute(text("ANALYZE"))
        db.dispose()
        print(f"seeded {args.interactions:,} interactions over {args.days} days in "
              f"{time.perf_counter() - started:.0f}s")
        trees = [ROOT, *(t.resolve() for t in args.tree)]
        from bench.trees import measure_in  # not in the child: an older tree has no such file

        found = {tree: measure_in(tree, __file__, "--measure", url, "--rounds", str(args.rounds))
                 for tree in trees}
        results = {tree: (f["times"], f["first"]) for tree, f in found.items()}
    finally:
        if cluster is not None:
            cluster.stop()
    # First view: right after start-up; median: what someone clicking around sees.
    for tree, (times, first) in results.items():
        print(f"\n{tree}")
        print(f"{'page':<52} {'first ms':>9} {'median ms':>10} {'max ms':>8}")
        for path, samples in times.items():
            print(f"{path:<52} {first[path]:>9.1f} {statistics.median(samples):>10.1f} "
                  f"{max(samples):>8.1f}")


if __name__ == "__main__":
    main()
