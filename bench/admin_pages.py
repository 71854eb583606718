"""Server time per admin-console page with 100,000 interactions in a real PostgreSQL."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import text

from bot.admin.routes import mount
from bot.settings import Settings
from rag.embed import LocalEmbedder
from storage.db import Database
from tests.admin.seed import seed
from tests.pg import ENV_URL, Cluster, _bin_dir

PAGES = ["/admin/", "/admin/?window=7d", "/admin/questions", "/admin/questions?status=no_answer",
         "/admin/questions?q=vpn", "/admin/questions?vote=down&channel=%23team-3",
         "/admin/questions?doc=d17", "/admin/questions/54321", "/admin/gaps",
         "/admin/documents", "/admin/documents?view=never", "/admin/documents?view=down",
         "/admin/sources", "/admin/evaluation"]
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
    times: dict[str, list[float]] = {}
    root = web.Application(middlewares=[timing(times)])
    settings = Settings(admin={"password": PASSWORD},
                        sources=[{"name": "handbook", "kind": "folder", "path": "."}])
    embedder = LocalEmbedder()
    await embedder.embed_query("warm-up")  # `sift serve` loads the model before serving
    mount(root, db, settings, embedder, None)
    async with TestClient(TestServer(root)) as client:
        page = await (await client.get("/admin/login")).text()
        token = re.search(r'name="csrf" value="([^"]+)"', page)
        assert token is not None
        await client.post("/admin/login", data={"csrf": token.group(1), "password": PASSWORD})
        for path in PAGES:  # the first view of each page warms caches (gaps: embeddings)
            response = await client.get(path)
            assert response.status == 200, (path, response.status)
        first = {path: samples[0] for path, samples in times.items()}
        times.clear()
        for _ in range(rounds):
            for path in PAGES:
                await (await client.get(path)).read()
    db.dispose()
    return times, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--interactions", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=30, help="spread over this many days")
    parser.add_argument("--rounds", type=int, default=5, help="timed views per page")
    args = parser.parse_args()
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
        times, first = asyncio.run(measure(url, args.rounds))
    finally:
        if cluster is not None:
            cluster.stop()
    # The first view fills the console's caches (past days, question vectors); later views
    # are what someone clicking around sees.
    print(f"{'page':<52} {'first ms':>9} {'median ms':>10} {'max ms':>8}")
    for path, samples in times.items():
        print(f"{path:<52} {first[path]:>9.1f} {statistics.median(samples):>10.1f} "
              f"{max(samples):>8.1f}")


if __name__ == "__main__":
    main()
