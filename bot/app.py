"""The composition root: settings in, clients and services out. Nothing else wires components."""

from __future__ import annotations

import logging
import sys
from functools import cached_property
from pathlib import Path

from bot.settings import Settings, build_settings
from bot.weaviate.install import find_binary
from bot.weaviate.process import ManagedWeaviate, Ports
from bot.web import HealthCheck
from rag.embed import LocalEmbedder, VoyageEmbedder
from rag.errors import ConfigError
from rag.index import IndexConfig, WeaviateIndex
from rag.logcontext import CorrelationFilter
from rag.ports import Embedder

LOG_FORMAT = "%(asctime)s %(levelname)s [%(correlation_id)s] %(name)s: %(message)s"


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(CorrelationFilter())
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Client libraries log every request at INFO; keep the log about Sift.
    for noisy in ("httpx", "httpcore", "urllib3", "sentence_transformers", "apscheduler"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def load_settings(config: Path | None = None) -> Settings:
    """Load and validate settings once; raises ConfigError with one sentence naming the key."""
    settings = build_settings(config)
    configure_logging(settings.log_level)
    return settings


class App:
    """Builds each client or service on first use, from one Settings object."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def data_dir(self) -> Path:
        return self.settings.data_dir

    @cached_property
    def managed_weaviate(self) -> ManagedWeaviate | None:
        """The server Sift runs itself; None when SIFT_WEAVIATE_URL names an existing one."""
        if self.settings.weaviate_url:
            return None
        w = self.settings.weaviate
        ports = Ports(w.http_port, w.grpc_port, w.gossip_port, w.data_port, w.raft_port,
                      w.raft_rpc_port, w.profiling_port)
        binary = find_binary(w.version, self.settings.weaviate_binary)
        return ManagedWeaviate(binary, self.data_dir / "weaviate", ports)

    @cached_property
    def index_config(self) -> IndexConfig:
        s, w = self.settings, self.settings.weaviate
        managed = self.managed_weaviate
        if managed is None:
            http_url, grpc_url = s.weaviate_url, w.grpc_url
            api_key = s.weaviate_api_key.get_secret_value() if s.weaviate_api_key else None
        else:
            http_url, grpc_url = managed.url, f"127.0.0.1:{w.grpc_port}"
            api_key = managed.api_key
        return IndexConfig(
            http_url=http_url,
            grpc_url=grpc_url,
            api_key=api_key,
            collection=w.collection,
            connect_timeout_s=w.connect_timeout_s,
            query_timeout_s=w.query_timeout_s,
            insert_timeout_s=w.insert_timeout_s,
            title_boost=s.retrieval.title_boost,
        )

    @cached_property
    def embedder(self) -> Embedder:
        e = self.settings.embedding
        if e.provider == "voyage":
            if e.voyage_api_key is None:
                raise ConfigError(
                    "SIFT_EMBEDDING__VOYAGE_API_KEY is not set.",
                    user_message="SIFT_EMBEDDING__PROVIDER is 'voyage' but "
                    "SIFT_EMBEDDING__VOYAGE_API_KEY is not set.",
                )
            return VoyageEmbedder(
                api_key=e.voyage_api_key.get_secret_value(),
                model=e.voyage_model,
                dimension=e.voyage_dimension,
                base_url=e.voyage_base_url,
                batch_size=e.batch_size,
            )
        return LocalEmbedder(batch_size=e.batch_size, max_seq_length=e.max_seq_length)

    def health_checks(self) -> dict[str, HealthCheck]:
        """Checks beyond the index that /healthz reports (the database joins with storage)."""
        return {}

    def index(self) -> WeaviateIndex:
        """A new index client bound to the configured collection and embedder (call `connect`)."""
        return WeaviateIndex(self.index_config, self.embedder.name, self.embedder.dimension)
