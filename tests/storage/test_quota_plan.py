"""The per-person quota on PostgreSQL reads this window's keys, not the day of event ids."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, insert, text

from storage.columns import utc_now
from storage.db import Database
from storage.models import EventKey
from storage.quota import QuotaRepository
from tests.storage.conftest import empty_database

pytestmark = pytest.mark.postgres


@pytest.fixture
def database(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    with empty_database(request, "postgres", tmp_path_factory) as url:
        db = Database(url)
        db.upgrade()
        yield db
        db.dispose()


def scans(plan: dict[str, Any]) -> list[tuple[str, str]]:
    """(node type, index name) of every node in an EXPLAIN (FORMAT JSON) plan."""
    found = [(plan["Node Type"], plan.get("Index Name", ""))]
    for child in plan.get("Plans", []):
        found += scans(child)
    return found


def test_the_count_uses_the_expiry_index_beside_a_day_of_event_ids(database: Database) -> None:
    now = utc_now()
    with database.write() as session:  # a busy day of claimed event ids (24-hour dedupe)
        session.execute(insert(EventKey), [
            {"key": f"slack:Ev{n:08d}", "expires_at": now + timedelta(hours=24, seconds=-n)}
            for n in range(20_000)])
    with database.engine.begin() as connection:
        connection.execute(text("ANALYZE event_keys"))

    counted: list[tuple[str, Any]] = []

    def note(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "count(" in statement:
            counted.append((statement, parameters))

    event.listen(database.engine, "before_cursor_execute", note)
    try:
        quota = QuotaRepository(database)
        assert [quota.allow("U1", 2, 60) for _ in range(3)] == [True, True, False]
    finally:
        event.remove(database.engine, "before_cursor_execute", note)

    statement, parameters = counted[-1]
    with database.engine.connect() as connection:
        raw = connection.exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement,
                                         parameters).scalar_one()
    plan = (raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"]
    nodes = scans(plan)
    assert ("Seq Scan", "") not in nodes, nodes
    assert any(index == "ix_event_keys_expires_at" for _, index in nodes), nodes
