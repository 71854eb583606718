"""The composition root: settings in, clients and services out. Nothing else wires components."""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import replace
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from bot import llm_setup, surfaces
from bot.chat.capture import CAPTURED_PREFIX, WithCaptured
from bot.chat.comments import PendingComments
from bot.chat.deflection import Outcomes
from bot.chat.files import FileReader
from bot.chat.flow import ChatFlow, Policies
from bot.chat.policy import (
    ChannelPolicy,
    Known,
    PolicyDefaults,
    Respond,
    StoredPolicies,
    policy_settings,
    validate,
)
from bot.chat.service import Answering, ChatLimits, ChatService, ChatStores, FeedbackStore
from bot.disk import disk_room
from bot.hooks import PushEndpoint
from bot.llm_setup import Endpoint
from bot.permissions.directory import GroupDirectory
from bot.proxy import TrustedProxies
from bot.settings import ChannelSettings, Settings, SourceSettings, build_settings, to_config
from bot.settings_check import parse_networks
from bot.slack import spec as slack_surface
from bot.surface_spec import Around
from bot.teams.source import source_config
from bot.web import Health, HealthCheck
from rag import messages
from rag.circuit import CircuitBreaker
from rag.config import (
    GradingConfig,
    ModelConfig,
    PipelineConfig,
    RetrievalConfig,
    SelectionConfig,
)
from rag.embed import LocalEmbedder, VoyageEmbedder
from rag.errors import ConfigError
from rag.generate import ExtractiveGenerator, LLMGenerator
from rag.grade import Grader, LLMGrader
from rag.grade_cache import CachedGrader
from rag.heuristic import HeuristicGrader
from rag.index import IndexConfig, WeaviateIndex
from rag.index_schema import VectorIndexSettings
from rag.language import CorpusLanguage
from rag.logcontext import CorrelationFilter
from rag.lookup import DocumentStore
from rag.output_policy import OutputPolicy, hosts_of
from rag.patience import Patience, Retrying
from rag.pipeline import Pipeline, Stages
from rag.ports import (
    LLM,
    Embedder,
    GradeCache,
    InteractionRecorder,
    LanguageCounts,
    ReviewDates,
    SearchIndex,
    SyncProgress,
)
from rag.prior import EVIDENCE_SOURCES, DocumentPriors, PriorConfig
from rag.query_cache import QueryVectorCache
from rag.retrieve import Retriever
from rag.understand import Understander
from storage.answers import AnswerDrafts
from storage.audit import AuditLog
from storage.channel_policies import ChannelPolicyRepository
from storage.db import Database
from storage.dedupe import DedupeRepository
from storage.errors import DatabaseUnavailable, StorageError
from storage.expiring import ExpiringStore
from storage.feedback import FeedbackRepository
from storage.grade_cache import GradeCacheRepository
from storage.history import HistoryRepository
from storage.interactions import InteractionRepository
from storage.leases import Lease, LeaseTaken
from storage.outcomes import HelpOutcomes
from storage.overrides import HistoryOfDocuments, OverrideRepository
from storage.quota import QuotaRepository
from storage.retention import Retention
from storage.sync_state import SyncStateRepository
from storage.tokens import TokenRepository
from sync.chunk import ChunkingConfig
from sync.connectors import registry
from sync.connectors.base import Connector
from sync.connectors.slack import PRIVATE_PREFIX
from sync.connectors.teams_thread import CHANNEL_PREFIX, TEAM_PREFIX
from sync.interrupt import StopRequest
from sync.job import JobConfig
from sync.lock import SyncBusy
from sync.ports import ChunkIndex
from sync.runner import SyncRunner, SyncSource
from sync.schedule import SourceSchedule, SyncScheduler
from weaviate_server.install import find_binary
from weaviate_server.process import ManagedWeaviate, Ports

if TYPE_CHECKING:
    from bot.answers.owners import Owners
    from bot.answers.review import AnswerReview
    from bot.api.oauth import OAuthTokens
    from bot.chat.capture import CaptureFlow
    from bot.chat.notify import Switchboard
    from bot.metrics.registry import Metrics
    from bot.permissions.resolver import GroupResolver
    from bot.runtime import ManagedRun
    from bot.webchat.app import Gate
    from evaluation.evaluation import Harness
    from rag.llm import AnthropicLLM
    from rag.llm_openai import OpenAILLM
    from storage.reviews import DocumentReviews

log = logging.getLogger(__name__)
LOG_FORMAT = "%(asctime)s %(levelname)s [%(correlation_id)s] %(name)s: %(message)s"


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a record arrives, so that a replaced stderr
    (a test's capture, a daemon's redirect) never leaves the handler on a closed stream."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def _json_formatter() -> logging.Formatter:
    """One JSON object per line: time, level, logger, message, correlation id, and the
    fields a line adds (the access log's method, path, status, duration and client)."""
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s %(correlation_id)s",
                         rename_fields={"asctime": "time", "levelname": "level",
                                        "name": "logger"}, timestamp=False)


def configure_logging(level: str, format: str = "text") -> None:
    handler = _StderrHandler()
    handler.addFilter(CorrelationFilter())
    handler.setFormatter(_json_formatter() if format == "json" else logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    # Replace only our own handler: others (a test runner's capture) keep working.
    root.handlers[:] = [h for h in root.handlers if not isinstance(h, _StderrHandler)]
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Client libraries log every request at INFO; keep the log about Sift. The Anthropic
    # SDK's HTTP stack is quieted by what it is when the client is built (quiet_http_stack).
    # httpx: Weaviate's client makes a REST call or three per command.
    # botocore and google-auth: the clouds' credential chains say where they found keys.
    for noisy in ("urllib3", "httpx", "apscheduler", "alembic", "botocore", "google.auth"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # The Agents SDK warns on every anonymous (local) activity; Sift warns once at start-up.
    logging.getLogger("microsoft_agents").setLevel(logging.ERROR)
    # pypdf warns about each flaw it works around ("EOF marker not found"); a PDF it cannot
    # read anyway is reported once, by name, as the document that failed.
    logging.getLogger("pypdf").setLevel(logging.ERROR)


def quiet_http_stack(client_class: type) -> None:
    """Quiet the packages an SDK's HTTP client class is built from (found from its MRO, so a
    renamed HTTP library, as httpx -> httpx2 once was, cannot log every call at INFO)."""
    for package in {k.__module__.split(".")[0] for k in client_class.__mro__} - {"builtins"}:
        logging.getLogger(package).setLevel(logging.WARNING)


def load_settings(config: Path | None = None) -> Settings:
    """Load and validate settings once; raises ConfigError with one sentence naming the key."""
    settings = build_settings(config)
    configure_logging(settings.log_level, settings.log_format)
    return settings


class SyncLease:
    """The sync runner's shared lock over a database lease; a taken lease is SyncBusy."""

    def __init__(self, lease: Lease, source: str) -> None:
        self._lease = lease
        self._source = source

    def acquire(self) -> None:
        try:
            self._lease.acquire()
        except LeaseTaken as exc:
            raise SyncBusy(str(exc), user_message=f"Another Sift replica is syncing "
                           f"'{self._source}'; this one skips the run.") from exc

    def release(self) -> None:
        self._lease.release()


class App:
    """Builds each client or service on first use, from one Settings object."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # Set by `sift serve` (bot/server.py) before it builds anything: the seams below then
        # count what passes them. Short-lived commands keep no metrics.
        self.metrics: Metrics | None = None

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
        return ManagedWeaviate(binary, self.data_dir / "weaviate", ports,
                               memory_limit=w.memory_limit, disk_access=w.disk_access)

    @property
    def weaviate_run(self) -> ManagedRun:
        """What a short-lived command needs to start the managed Weaviate (bot/runtime.py)."""
        from bot.runtime import ManagedRun

        return ManagedRun(self.managed_weaviate, self.settings.weaviate)

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
            replication_factor=w.replication_factor,
            read_consistency=w.read_consistency,
            write_consistency=w.write_consistency,
            vectors=VectorIndexSettings(ef=w.ef, ef_construction=w.ef_construction,
                                        max_connections=w.max_connections,
                                        compression=w.compression),
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
        return LocalEmbedder(batch_size=e.batch_size, max_seq_length=e.max_seq_length,
                             backend=e.backend, threads=e.threads)

    @cached_property
    def trusted_proxies(self) -> TrustedProxies:
        """Whose X-Forwarded-* headers name the real client (SIFT_TRUSTED_PROXIES)."""
        return TrustedProxies(parse_networks(self.settings.trusted_proxies))

    def health_checks(self) -> dict[str, HealthCheck]:
        """Checks beyond the index that /healthz reports."""
        places = {"the data directory": self.data_dir}
        if self.database.file is not None:
            places["the database"] = self.database.file.parent
        room = disk_room(places, int(self.settings.storage.min_free_mb * 2**20))
        return {"database": self._database_health, "disk": room}

    def index(self, collection: str = "") -> WeaviateIndex:
        """A new index client bound to the configured (or the named) collection; call `connect`."""
        config = replace(self.index_config, collection=collection) if collection \
            else self.index_config
        return WeaviateIndex(config, self.embedder.name, self.embedder.dimension)

    # --- Storage: one Database per App, repositories over it ----------------------------------

    @cached_property
    def database(self) -> Database:
        return Database(self.settings.resolved_database_url)

    @cached_property
    def interactions(self) -> InteractionRepository:
        storage = self.settings.storage
        return InteractionRepository(self.database, relevant_threshold=storage.relevant_threshold,
                                     store_text=storage.store_text,
                                     evidence_sources=[str(g) for g in EVIDENCE_SOURCES])

    @cached_property
    def feedback(self) -> FeedbackRepository:
        return FeedbackRepository(self.database, store_text=self.settings.storage.store_text)

    @cached_property
    def grade_cache(self) -> GradeCacheRepository:
        ttl = timedelta(days=self.settings.grading.cache_ttl_days)
        return GradeCacheRepository(self.database, ttl=ttl)

    @cached_property
    def overrides(self) -> OverrideRepository:
        return OverrideRepository(self.database)

    @cached_property
    def document_priors(self) -> DocumentPriors:
        from bot.priors import StoredPriors

        prior = self.settings.prior
        return StoredPriors(self.overrides, HistoryOfDocuments(self.database), self.prior_config,
                            learn=prior.learn, refresh_s=prior.refresh_s)

    @cached_property
    def prior_config(self) -> PriorConfig:
        """The `[prior]` settings, for answers and for `sift eval --simulate-feedback` alike."""
        p = self.settings.prior
        return PriorConfig(low=p.low, high=p.high, half_life_days=p.half_life_days)

    @cached_property
    def sync_state(self) -> SyncStateRepository:
        return SyncStateRepository(self.database)

    @cached_property
    def dedupe(self) -> DedupeRepository:
        return DedupeRepository(self.database)

    @cached_property
    def history(self) -> HistoryRepository:
        storage = self.settings.storage
        max_age = None if storage.store_text else \
            timedelta(hours=storage.history_hours_without_text)
        return HistoryRepository(self.database, max_age=max_age)

    @cached_property
    def audit(self) -> AuditLog:
        return AuditLog(self.database)

    @cached_property
    def tokens(self) -> TokenRepository:
        """Personal access tokens for the HTTP API and MCP (`sift tokens`)."""
        return TokenRepository(self.database)

    @cached_property
    def retention(self) -> Retention:
        return Retention(self.database)

    @cached_property
    def storage_retrying(self) -> Retrying:
        """How answers' records, votes and the chat's other writes wait out a database
        server that is away for a moment (SIFT_STORAGE__OUTAGE_WAIT_S)."""
        return Retrying(Patience(self.settings.storage.outage_wait_s),
                        lambda exc: isinstance(exc, DatabaseUnavailable))

    async def _database_health(self) -> Health:
        try:
            await asyncio.to_thread(self.database.ping)
        except StorageError as exc:
            return Health(False, str(exc))
        return Health(True)

    # --- End of storage ------------------------------------------------------------------------

    # --- Sync: connectors per [[sources]], the runner and its schedule ------------------------

    def connector(self, source: SourceSettings) -> Connector:
        """The connector for one configured source; ConfigError names what is missing."""
        spec = registry.SPECS[source.kind]  # settings validation already refused other kinds
        config = replace(source.connector_config(),
                         max_file_bytes=self.sync_config.max_file_bytes)
        if source.kind == "slack":  # Sift's own workspace: the bot's token unless it names one
            bot = slack_surface.config(self.settings)
            config = replace(config, url=config.url or bot.api_url,
                             token=config.token or bot.bot_token)
        if source.kind == "teams":  # the Teams bot's own app unless the source names its own
            return spec.build(*source_config(self.settings, source, config))
        return spec.build(config, source.options)

    @cached_property
    def sync_config(self) -> JobConfig:
        s, e = self.settings.sync, self.settings.embedding
        target = s.target_tokens or 400
        if s.target_tokens is None and e.provider == "local":
            # Fit the model window: ~1.2 word pieces per token, 16 pieces of title/section.
            target = min(target, max(64, int((e.max_seq_length - 16) / 1.2)))
        default = max(1, target // 8)
        chunking = ChunkingConfig(
            target_tokens=target,
            overlap_tokens=default if s.overlap_tokens is None else s.overlap_tokens,
            min_tokens=default if s.min_tokens is None else s.min_tokens)
        groups = self.settings.groups  # with the Entra ids SharePoint names, so they count
        known = frozenset(["public", *(g.name for g in groups),
                           *GroupDirectory(groups).principals])
        return JobConfig(chunking=chunking, embed_batch=s.embed_batch,
                         checkpoint_overlap_s=s.checkpoint_overlap_s, known_groups=known,
                         live_principals=(PRIVATE_PREFIX, TEAM_PREFIX, CHANNEL_PREFIX,
                                          CAPTURED_PREFIX),
                         max_file_bytes=int(s.max_file_mb * 2**20))

    def sync_runner(self, index: ChunkIndex, stop: StopRequest | None = None) -> SyncRunner:
        """Every configured source (the sample knowledge base when none is) over one index."""
        sources = [SyncSource(s.name, self.connector(s)) for s in self.settings.resolved_sources]
        shared = self.sync_lease if self.database.dialect == "postgresql" else None
        observer = None
        if self.metrics is not None:
            from bot.metrics.observe import SyncMeter

            observer = SyncMeter(self.metrics)
        return SyncRunner(sources, index, self.embedder, self.sync_state,
                          self.data_dir / "locks", self.sync_config, shared_lock=shared,
                          stop=stop, observer=observer, builtin=[self.answers_source])

    @cached_property
    def answer_drafts(self) -> AnswerDrafts:
        return AnswerDrafts(self.database)

    @cached_property
    def answers_source(self) -> SyncSource:
        """Approved answers, as the built-in `answers` source (bot/answers/documents.py)."""
        from bot.answers.documents import SOURCE, AnswerSource

        return SyncSource(SOURCE, AnswerSource(self.answer_drafts))

    def sync_lease(self, source: str) -> SyncLease:
        """Replicas sharing one PostgreSQL run each source's sync once (an advisory lock)."""
        return SyncLease(Lease(self.database, f"sync:{source}"), source)

    def sync_scheduler(self, runner: SyncRunner, *, first_pass: bool = True) -> SyncScheduler:
        """`sift serve`'s schedule: incremental and full passes per source; `first_pass`: also
        one at start-up, and the removal of sources no longer configured."""
        schedules = [SourceSchedule(s.name, s.interval_minutes, s.cron, s.full_cron)
                     for s in self.settings.resolved_sources]
        from bot.config_watch import ConfiguredSources

        return SyncScheduler(runner, schedules,
                             misfire_grace_s=self.settings.sync.misfire_grace_s,
                             sync_on_start=first_pass and self.settings.sync.sync_on_start,
                             prune_on_start=first_pass,
                             configured=ConfiguredSources(self.settings,
                                                          self.settings.config).names)

    def push_endpoints(self) -> dict[str, PushEndpoint]:
        """Every source's webhook endpoint: its receiver, or None when its kind takes none."""
        endpoints: dict[str, PushEndpoint] = {}
        for source in self.settings.resolved_sources:
            spec = registry.SPECS[source.kind]
            receiver = (spec.push(source.connector_config(), source.options)
                        if spec.push is not None else None)
            endpoints[source.name] = PushEndpoint(source.kind, receiver)
        return endpoints

    # --- End of sync ---------------------------------------------------------------------------

    # --- The question pipeline -------------------------------------------------------------

    async def aclose(self) -> None:
        """Release network clients opened for this App (the LLM's connection pool)."""
        if "llm" in self.__dict__ and self.llm is not None:
            await self.llm.close()
        if "access_resolver" in self.__dict__:
            await self.access_resolver.aclose()

    @cached_property
    def access_resolver(self) -> GroupResolver:
        """Which access groups a question searches with: bot/permissions states the rule."""
        from bot.permissions.build import build_resolver  # slack_sdk loads only when asked

        return build_resolver(self.settings)

    @cached_property
    def llm_endpoint(self) -> Endpoint | None:
        """The model service the settings name (checked: ConfigError naming the setting), or
        None: no LLM configured, and Sift runs in fast mode."""
        return llm_setup.resolve(self.settings)

    @cached_property
    def llm(self) -> AnthropicLLM | OpenAILLM | None:
        """The LLM port's adapter for SIFT_LLM__PROVIDER (docs/llm-providers.md)."""
        endpoint = self.llm_endpoint
        if endpoint is None:
            return None
        llm = llm_setup.build(self.settings, endpoint)
        quiet_http_stack(llm.http_client_class)
        return llm

    @cached_property
    def pipeline_config(self) -> PipelineConfig:
        s = self.settings
        default_mode = s.mode or ("accurate" if self.llm is not None else "fast")
        return PipelineConfig(
            retrieval=to_config(s.retrieval, RetrievalConfig),
            grading=to_config(s.grading, GradingConfig),
            selection=to_config(s.selection, SelectionConfig),
            models=to_config(s.llm, ModelConfig),
            default_mode=default_mode,
            fast_share=s.ab.fast_share,
        )

    @cached_property
    def llm_circuit(self) -> CircuitBreaker | None:
        """The model behind the circuit breaker every pipeline of this App shares."""
        if self.llm is None or self.llm_endpoint is None:
            return None
        llm: LLM = self.llm
        if self.metrics is not None:  # inside the breaker: only calls that were made count
            from bot.metrics.observe import MeteredLLM

            llm = MeteredLLM(llm, self.metrics, self.llm_endpoint.provider,
                             self.settings.admin.prices)
        return CircuitBreaker(llm, self.settings.llm.circuit_cooldown_s)

    def pipeline(self, index: SearchIndex, *, recorder: InteractionRecorder | None = None,
                 cache: GradeCache | None = None,
                 priors: DocumentPriors | None = None,
                 syncs: SyncProgress | None = None,
                 reviews: ReviewDates | None = None) -> Pipeline:
        config, llm = self.pipeline_config, self.llm_circuit
        models = config.models
        accurate: Grader | None = None
        generator = None
        if llm is not None:
            accurate = LLMGrader(llm, models.fast_model, config.grading, models.cache_min_tokens)
            if cache is not None:
                version = f"{config.grading.version}:{models.fast_model}"
                accurate = CachedGrader(accurate, cache, version)
            generator = LLMGenerator(llm, models.answer_model, models.answer_max_tokens,
                                     models.cache_min_tokens, self.settings.llm.timeout_s)
        stages = Stages(
            understander=Understander(llm, models.fast_model),
            retriever=Retriever(index, QueryVectorCache(self.embedder), config.retrieval),
            fast_grader=HeuristicGrader(),
            accurate_grader=accurate,
            generator=generator,
            extractive=ExtractiveGenerator(),
            fallback_extractive=ExtractiveGenerator(note=messages.LLM_DOWN_NOTE),
            priors=priors,
            syncs=syncs,
            reviews=reviews,
            circuit=llm,
            documents=index if isinstance(index, DocumentStore) else None,
            # The documents' language (stored at sync), for questions asked in another.
            corpus=CorpusLanguage(index) if isinstance(index, LanguageCounts) else None,
        )
        return Pipeline(stages, config, recorder, self.output_policy,
                        recording=self.storage_retrying)

    def evaluation_harness(self) -> Harness:
        """What `sift eval` and the benches run an evaluation with (evaluation/)."""
        from evaluation.evaluation import Harness

        s = self.settings
        return Harness(index=self.index, pipeline=lambda index: self.pipeline(index),
                       embedder=self.embedder, job=self.sync_config,
                       config=self.pipeline_config, prior=self.prior_config, llm=self.llm,
                       folder=self.data_dir / "eval", embedding_backend=s.embedding.backend,
                       judge_timeout_s=s.llm.timeout_s * 2,
                       relevant_threshold=s.storage.relevant_threshold)

    @cached_property
    def output_policy(self) -> OutputPolicy:
        """Links allowed in answers: SIFT_OUTPUT__ALLOWED_HOSTS, else the sources' hosts."""
        hosts = self.settings.output.allowed_hosts
        if hosts is None:
            hosts = list(hosts_of(s.url for s in self.settings.resolved_sources if s.url))
        return OutputPolicy(hosts)

    # --- Chat platforms (Slack, Teams) -------------------------------------------------------

    @cached_property
    def document_reviews(self) -> DocumentReviews:
        """Review dates: each source's `review_days`, and `[answers] review_days` for the
        approved answers (docs/answers-loop.md)."""
        from bot.answers.owners import review_intervals
        from storage.reviews import DocumentReviews

        return DocumentReviews(self.database, review_intervals(
            self.settings.resolved_sources, self.settings.answers))

    @cached_property
    def channel_policies(self) -> ChannelPolicyRepository:
        return ChannelPolicyRepository(self.database)

    def seed_channel_policies(self) -> list[str]:
        """[[channels]] from sift.toml, for the channels the database has no policy for yet."""
        policies = [self.settings_policy(c) for c in self.settings.channels]
        return self.channel_policies.seed(
            (p.platform, p.channel, p.label, policy_settings(p)) for p in policies)

    def settings_policy(self, channel: ChannelSettings) -> ChannelPolicy:
        """One [[channels]] table as a checked policy; InputError names the field at fault."""
        values = channel.model_dump()
        policy = ChannelPolicy(**{**values, "respond": Respond(values["respond"]),
                                  **{k: tuple(values[k]) for k in ("sources", "escalate_to",
                                                                   "audience", "experts")}})
        return validate(policy, self.known_names())

    def known_names(self) -> Known:
        return surfaces.policy_names(self.settings)

    def chat_flow(self, service: ChatService, owners: Owners | None = None) -> ChatFlow:
        """The one ask flow and vote flow every chat surface runs; `owners` hear of 👎s."""
        defaults = PolicyDefaults(follow_ups=surfaces.follow_ups(self.settings))
        retrying = self.storage_retrying
        return ChatFlow(service, Policies(StoredPolicies(self.channel_policies), defaults,
                                          retrying), WithCaptured(self.access_resolver),
                        PendingComments(ExpiringStore(self.database), retrying=retrying),
                        Outcomes(HelpOutcomes(self.database)),
                        files=FileReader(self.settings.files), owners=owners)

    def owners(self, switchboard: Switchboard) -> Owners:
        """Documents' owners: each source's `owner`, and an approved answer's author."""
        from bot.answers.owners import Owners

        return Owners(self.document_reviews,
                      {s.name: s.owner for s in self.settings.resolved_sources},
                      self.answer_drafts, self.overrides, self.audit,
                      switchboard)

    def chat_service(self, pipeline: Pipeline) -> ChatService:
        """The admission, linking and feedback logic both chat adapters share."""
        chat, storage = self.settings.chat, self.settings.storage
        limits = ChatLimits(quota_per_minute=chat.quota_per_minute,
                            max_message_chars=chat.max_message_chars,
                            dedupe_ttl_s=storage.dedupe_ttl_hours * 3600,
                            history_turns=chat.history_turns)
        feedback: FeedbackStore = self.feedback
        answers: Answering = pipeline
        if self.metrics is not None:
            from bot.metrics.observe import MeteredAnswers, MeteredFeedback

            answers = MeteredAnswers(pipeline, self.metrics,
                                     question_text=self.settings.tracing.question_text)
            feedback = MeteredFeedback(feedback, self.metrics)
        stores = ChatStores(dedupe=self.dedupe, links=self.interactions, feedback=feedback,
                            history=self.history, quota=QuotaRepository(self.database))
        return ChatService(answers, stores, limits, self.storage_retrying,
                           lookup=pipeline.lookup, vision=pipeline.reads_images)

    def around(self, flow: ChatFlow, gate: Gate | None = None) -> Around:
        """What every chat surface is given to build itself (bot/surface_spec.py)."""
        from bot.startup import place_of

        chat = self.settings.chat
        return Around(flow, place_of(self.settings, admin=gate is not None),
                      max_in_flight=chat.max_in_flight, history_turns=chat.history_turns,
                      max_message_chars=chat.max_message_chars,
                      sources=tuple(s.name for s in self.settings.resolved_sources), gate=gate,
                      tokens=self.tokens, oidc_issuer=self.settings.admin.oidc.issuer,
                      oauth=self.oauth_tokens)

    @cached_property
    def oauth_tokens(self) -> OAuthTokens | None:
        """The OpenID provider's access tokens for MCP and the API (one key set, shared)."""
        oidc = self.settings.admin.oidc
        if not oidc.enabled:
            return None
        from bot.api.oauth import IssuerKeys, OAuthTokens

        return OAuthTokens(IssuerKeys(oidc.issuer, oidc.timeout_s), oidc.email_claim)

    def capture_flow(self, service: ChatService, policies: Policies,
                     review: AnswerReview) -> CaptureFlow:
        """People's replies taken as answer drafts: rewritten by the fast model when one is
        configured, else kept as written; a channel's experts' replies approved at once."""
        from bot.answers.auto import ExpertApproval
        from bot.answers.writer import ModelWriter
        from bot.chat.capture import AsWritten, CaptureFlow, DraftWriter

        writer: DraftWriter = AsWritten()
        if self.llm_circuit is not None:
            writer = ModelWriter(self.llm_circuit, self.pipeline_config.models.fast_model,
                                 self.settings.llm.timeout_s)
        return CaptureFlow(self.answer_drafts, writer, service, self.storage_retrying,
                           Outcomes(HelpOutcomes(self.database)),
                           ExpertApproval(policies, review))

    def answer_review(self, runner: SyncRunner, pipeline: Pipeline) -> AnswerReview:
        """Approve, edit, reject; `pipeline` answers the re-ask check (record it nowhere)."""
        from bot.answers.reask import Reasker
        from bot.answers.review import AnswerReview, runner_index

        checker = Reasker(pipeline, WithCaptured(self.access_resolver), self.embedder,
                          self.answer_drafts)
        return AnswerReview(self.answer_drafts, self.audit, runner_index(runner.run_ids),
                            checker)
