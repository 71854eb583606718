"""kill -9 of one replica's `sift sync` while it holds the source's lease on the shared
PostgreSQL: the lease goes with the process, and another replica's run finishes the work."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from storage.db import Database
from storage.leases import Lease, LeaseTaken
from tests.conftest import unique_collection
from tests.sync.test_crash import Site, corpus
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.postgres, pytest.mark.slow]


def _replica(root: Path, server: ManagedWeaviate, kb: Path, database_url: str,
             collection: str) -> Site:
    """A replica on its own machine, as far as Sift can tell: its own data dir (so its own
    file lock), the shared database and the shared collection."""
    site = Site(root, server, kb)
    site.collection = collection
    site.env |= {"SIFT_DATABASE_URL": database_url, "SIFT_WEAVIATE__COLLECTION": collection}
    return site


def test_a_replica_killed_mid_sync_leaves_the_lease_to_the_next(
        tmp_path: Path, weaviate_server: ManagedWeaviate, database_url: str) -> None:
    kb = tmp_path / "kb"
    corpus(kb, 1)
    dying = _replica(tmp_path / "dying", weaviate_server, kb, database_url,
                     unique_collection("Replica"))
    other = _replica(tmp_path / "other", weaviate_server, kb, database_url, dying.collection)
    # One chunk per write: ~90 small steps, so "mid-run" lasts long enough to be caught even
    # with the fast embedder on a quiet machine (at 8 per batch the run ended in between).
    dying.env["SIFT_SYNC__EMBED_BATCH"] = "1"
    db = Database(database_url)
    try:
        process = dying.start()
        deadline = time.monotonic() + 240
        while dying.count() < 8:  # mid-run: some chunks written, most not
            assert process.poll() is None, "the sync finished before the kill"
            assert time.monotonic() < deadline, "the sync wrote nothing within 240s"
            time.sleep(0.02)
        process.send_signal(signal.SIGSTOP)  # frozen mid-run: it cannot finish meanwhile
        assert process.poll() is None, "the sync finished before it could be frozen"
        with pytest.raises(LeaseTaken):  # the dying replica holds the source's lease
            Lease(db, "sync:kb").acquire()
        process.send_signal(signal.SIGKILL)
        process.wait()

        assert '"failed": 0' in other.sync()  # not "Another Sift replica is syncing 'kb'"
        assert '"unchanged": 30' in other.sync("--full")  # it finished the work
    finally:
        db.dispose()
        dying.drop()
