"""Several `sift serve` replicas on fake Slack, one PostgreSQL database and the Weaviate cluster."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from pydantic import SecretStr
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from bot.settings import Settings, SyncSettings, WeaviateSettings
from storage.db import Database
from storage.models import DocumentStats, InteractionSource
from tests.cluster.weaviate_cluster import WeaviateCluster
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import BOT_TOKEN
from weaviate_server.process import free_port

# Questions the test corpus (tests/rag/corpus.py) answers, made distinct by a case number.
TOPICS = ("How do I rotate the staging database credentials?",
          "How do I rotate the production database credentials?",
          "What are the API rate limits?", "How are webhook retries handled?")


def question(n: int) -> str:
    return f"{TOPICS[n % len(TOPICS)]} (case {n})"


def fresh_database(postgres_url: str) -> Iterator[str]:
    """A database of its own on the session's PostgreSQL server, dropped afterwards."""
    url = make_url(postgres_url)
    name = f"sift_replicas_{uuid.uuid4().hex[:8]}"
    admin = url.set(drivername="postgresql", database="postgres").render_as_string(
        hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def replica_settings(tmp_path: Path, n: int, cluster: WeaviateCluster, collection: str,
                     database_url: str, anthropic: FakeAnthropic, slack_api_url: str,
                     **overrides: Any) -> Settings:
    """Replica `n` talks to Weaviate node `n`: every node coordinates some of the traffic."""
    node = cluster.nodes[n % len(cluster.nodes)]
    values: dict[str, Any] = dict(
        data_dir=tmp_path / f"replica{n}", database_url=database_url,
        weaviate_url=node.url, weaviate_api_key=SecretStr(cluster.api_key),
        weaviate=WeaviateSettings(grpc_url=f"127.0.0.1:{node.ports.grpc}",
                                  collection=collection, replication_factor=3,
                                  connect_timeout_s=30),  # a loaded machine is slow, not down
        anthropic_api_key=SecretStr("sk-test-key"), anthropic_base_url=anthropic.url,
        slack_bot_token=SecretStr(BOT_TOKEN), slack_api_url=slack_api_url,
        host="127.0.0.1", port=free_port(), sync=SyncSettings(sync_on_start=False))
    values.update(overrides)
    return Settings(**values)


def thumbs_up_total(db: Database) -> tuple[int, int]:
    """(thumbs up over all documents, cited documents over all answers): equal when every
    vote reached the statistics of every document its answer cited."""
    with db.read() as session:
        up = session.scalar(select(func.coalesce(func.sum(DocumentStats.thumbs_up), 0)))
        cited = session.scalar(select(func.count()).select_from(
            select(InteractionSource.interaction_id, InteractionSource.doc_id)
            .where(InteractionSource.cited).distinct().subquery()))
    return int(up or 0), int(cited or 0)
