"""Sift's settings: SIFT_* environment variables over an optional sift.toml over defaults."""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from bot import settings_check
from bot.admin.passwords import Password
from bot.chat.service import ChatLimits
from rag.errors import ConfigError
from sync.connectors import registry
from sync.connectors.base import ConnectorSettings, SourceConfig
from sync.connectors.common.microsoft import GRAPH_URL, PUBLIC_CLOUD
from weaviate_server.install import PINNED_VERSION

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_KNOWLEDGE = PROJECT_ROOT / "examples" / "knowledge"


class _Section(BaseModel):
    # Frozen: loaded once, then only read (a copy with changes is model_copy(update=...)).
    model_config = ConfigDict(extra="forbid", frozen=True)


class WeaviateSettings(_Section):
    """The managed Weaviate server (ignored when SIFT_WEAVIATE_URL points at a running one)."""

    version: str = PINNED_VERSION
    http_port: int = Field(8080, ge=1, le=65535)
    grpc_port: int = Field(50051, ge=1, le=65535)
    gossip_port: int = Field(7946, ge=1, le=65535)
    data_port: int = Field(7947, ge=1, le=65535)
    raft_port: int = Field(8300, ge=1, le=65535)
    raft_rpc_port: int = Field(8301, ge=1, le=65535)
    profiling_port: int = Field(6060, ge=1, le=65535)
    grpc_url: str = ""  # gRPC endpoint of an external server; default: same host, port 50051
    collection: str = "SiftChunks"
    start_timeout_s: float = Field(90.0, gt=0)
    # A server that `sift ask`, `chat`, `sync` or `eval` started keeps running this long after
    # the last command used it, so the next one need not start it again (seconds saved per
    # command); 0 stops it when the command ends. `sift weaviate stop` stops it at once.
    keep_running_minutes: float = Field(15.0, ge=0)
    connect_timeout_s: float = Field(5.0, gt=0)
    query_timeout_s: float = Field(30.0, gt=0)
    insert_timeout_s: float = Field(120.0, gt=0)
    # A Weaviate cluster: copies of each chunk, and how many copies must answer a read or
    # acknowledge a write. One node: 1 and QUORUM (of one). Three nodes: 3, QUORUM, QUORUM
    # (docs/deployment.md, "Several replicas"). The factor is fixed when the collection is created.
    replication_factor: int = Field(1, ge=1, le=15)
    read_consistency: Literal["ONE", "QUORUM", "ALL"] = "QUORUM"
    write_consistency: Literal["ONE", "QUORUM", "ALL"] = "QUORUM"
    # The vector index (HNSW): `ef` is the search's candidate list (-1: Weaviate sizes it
    # per query) and follows this setting on a live collection; `ef_construction` and
    # `max_connections` shape the graph when the collection is created. `compression`
    # stores vectors rotationally quantized (8 bits: about a quarter of the memory; 1 bit:
    # about a thirty-second); it can be switched on for a live collection, never off.
    ef: int = Field(-1, ge=-1, le=10000)
    ef_construction: int = Field(128, ge=4, le=4096)
    max_connections: int = Field(32, ge=4, le=256)
    compression: Literal["none", "rq8", "rq1"] = "none"
    # The managed server's Go memory limit (GOMEMLIMIT, e.g. "3GiB"): its garbage collector
    # works harder as the heap nears it, instead of letting the heap grow to twice what is
    # live. Weaviate's guidance is 80-90% of the memory it may use. Empty: no limit.
    memory_limit: str = ""
    # How the managed server reads its segments: "mmap" maps them into its memory (the
    # pages it touched count in its resident set); "pread" reads what a query needs, leaving
    # the pages in the kernel's file cache (a million chunks: 4.3 GB resident with mmap, 1.4
    # GB with pread, bench/README.md). mmap is quicker from a cold cache.
    disk_access: Literal["mmap", "pread"] = "mmap"

    @field_validator("memory_limit")
    @classmethod
    def _go_memory_limit(cls, value: str) -> str:
        # Go's own syntax, checked here: a malformed GOMEMLIMIT stops Weaviate at start,
        # with the reason in Weaviate's log only.
        if value and not re.fullmatch(r"[0-9]+(B|KiB|MiB|GiB|TiB)?", value):
            raise ValueError(f"[weaviate] memory_limit = {value!r} is not a size Go reads: "
                             "write a whole number with B, KiB, MiB, GiB or TiB, e.g. '3GiB'")
        return value


# Embedding backends that were dropped, and what to set instead.
RETIRED_BACKENDS = {
    "onnx-int8": "onnx-int8 was retired: use openvino-int8 (int8 too, quicker and closer to the "
                 "full model) or openvino, then run `sift sync --rebuild`, as the index holds "
                 "onnx-int8's vectors",
}


class EmbeddingSettings(_Section):
    provider: Literal["local", "voyage"] = "local"
    # How the local model runs (docs/configuration.md): int8 by default, 1.4x quicker to index
    # than the float graph in bfloat16, for nDCG@10 within a point.
    backend: Literal["openvino", "onnx", "openvino-int8"] = "openvino-int8"
    local_model: str = "all-MiniLM-L6-v2"
    voyage_model: str = "voyage-3.5"
    voyage_api_key: SecretStr | None = None
    voyage_base_url: str = ""
    voyage_dimension: int = Field(1024, ge=1)
    batch_size: int = Field(32, ge=1, le=1024)
    max_seq_length: int = Field(256, ge=16, le=8192)
    # Threads the local model uses per process; 0: one per core, except in `sift serve`, where
    # 0 means 1 (a question's embedding is one short text, and threads of several processes
    # waiting on each other for a busy core slowed answers: see docs/configuration.md).
    threads: int = Field(0, ge=0, le=256)

    @field_validator("backend", mode="before")
    @classmethod
    def _retired_backend(cls, value: Any) -> Any:
        if value in RETIRED_BACKENDS:
            raise PydanticCustomError("retired_backend", RETIRED_BACKENDS[value])
        return value


LLMProvider = Literal["anthropic", "bedrock", "vertex", "openai"]


class LLMSettings(_Section):
    """The model service (docs/llm-providers.md has a section per provider)."""

    # anthropic: the Messages API (SIFT_ANTHROPIC_API_KEY); bedrock: Claude on Amazon Bedrock;
    # vertex: Claude on Google Vertex AI; openai: any OpenAI-compatible Chat Completions API
    # (vLLM, Ollama, llama.cpp's server, LM Studio, TGI, OpenAI, Azure OpenAI).
    provider: LLMProvider = "anthropic"
    # Model ids as the provider names them: Bedrock model or inference-profile ids, Vertex
    # `model@version`, or whatever the OpenAI-compatible server serves.
    fast_model: str = "claude-haiku-5-5"
    answer_model: str = "claude-sonnet-5-5"
    timeout_s: float = Field(30.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    answer_max_tokens: int = Field(1200, ge=64)
    # The model's minimum cacheable prompt; shorter system prompts are sent without caching.
    cache_min_tokens: int = Field(1024, ge=0)
    # After an authentication or spend-limit error: answer from excerpts this long, then probe.
    circuit_cooldown_s: float = Field(300.0, gt=0)
    # How grades and understanding get JSON: json_schema (structured outputs), tool (a forced
    # tool call), json_mode (the schema in the prompt; OpenAI's JSON mode where it exists).
    structured_output: Literal["json_schema", "tool", "json_mode"] = "json_schema"
    # The endpoint: required for openai (e.g. http://localhost:8000/v1 for vLLM); for bedrock
    # and vertex it replaces the region's public endpoint (a VPC endpoint or a proxy).
    base_url: str = ""
    api_key: SecretStr | None = None  # openai: the server's key (local servers may need none)
    azure_api_version: str = ""  # openai on Azure OpenAI: e.g. 2024-10-21; base_url = endpoint
    aws_region: str = ""  # bedrock; unset: AWS_REGION / the profile's region
    vertex_project: str = ""  # vertex; unset: the credentials' project
    vertex_region: str = ""  # vertex: e.g. us-east5, europe-west1 or global


class RetrievalSettings(_Section):
    limit: int = Field(20, ge=1, le=200)
    alpha: float = Field(0.5, ge=0.0, le=1.0)
    diversity: bool = True  # MMR over the hybrid results
    diversity_balance: float = Field(0.8, ge=0.0, le=1.0)  # 1 = pure relevance
    title_boost: float = Field(2.0, ge=1.0)
    # A search that finds Weaviate unreachable (a restart takes ~10 s) is tried again, with
    # backoff, for this long before the asker is told; 0 gives up at once.
    outage_wait_s: float = Field(20.0, ge=0, le=300)
    # A first question: searched and graded as asked while the model understands it (false:
    # searched with the model's phrases, one round trip later; bench.answer_latency).
    understand_beside: bool = True


class GradingSettings(_Section):
    strategy: Literal["pointwise", "batched"] = "pointwise"
    batch_size: int = Field(5, ge=1, le=50)
    concurrency: int = Field(20, ge=1, le=200)
    call_timeout_s: float = Field(15.0, gt=0)
    deadline_s: float = Field(25.0, gt=0)
    early_stop: bool = False
    early_stop_wave: int = Field(5, ge=1)
    early_stop_enough: int = Field(6, ge=1)
    early_stop_score: float = Field(0.8, ge=0.0, le=1.0)
    # Pointwise: a grade's score is used once read, its reason arrives while the answer is
    # written (false: each grade is awaited whole; bench.answer_latency compares).
    score_first: bool = True
    # Below 1: the answer is begun once this share of the grades is in, and kept only if the
    # last grades leave the selection as it was (1, the default: begun after every grade;
    # bench.early_answer_selection measured why).
    early_answer_share: float = Field(1.0, gt=0.0, le=1.0)
    cache_ttl_days: float = Field(30.0, ge=0)
    version: str = "g1"


class SelectionSettings(_Section):
    threshold: float = Field(0.5, ge=0.0, le=1.0)
    max_chunks: int = Field(10, ge=1, le=100)
    per_document: int = Field(2, ge=1, le=100)
    floor: int = Field(5, ge=0, le=100)
    floor_min: float = Field(0.4, ge=0.0, le=1.0)
    heuristic_floor_share: float = Field(0.5, ge=0.0, le=1.0)
    relative: float = Field(0.8, ge=0.0, le=1.0)
    retrieval_weight: float = Field(0.0, ge=0.0, le=1.0)


class PriorSettings(_Section):
    """The learned document prior (admin overrides apply whatever `learn` says)."""

    learn: bool = True
    low: float = Field(0.7, gt=0.0, le=1.0)
    high: float = Field(1.4, ge=1.0, le=5.0)
    half_life_days: float = Field(90.0, gt=0)
    # Seconds a replica reuses a document's learned multiplier before re-reading its history
    # (votes move it over days; overrides and hidden documents always apply at once).
    refresh_s: float = Field(60.0, ge=0)


class StorageSettings(_Section):
    relevant_threshold: float = Field(0.5, ge=0.0, le=1.0)
    store_text: bool = True  # False keeps only hashes of questions and answers
    # Conversation turns stay text (follow-ups need it); without store_text, only this long.
    history_hours_without_text: float = Field(24.0, gt=0)
    dedupe_ttl_hours: float = Field(24.0, gt=0)
    # A chat's records and votes wait this long, retrying, for a database that went away (a
    # PostgreSQL restart or failover takes seconds) before the person is told.
    outage_wait_s: float = Field(30.0, ge=0, le=600)
    # /healthz and /readyz say "disk full" (503) below this much free space for the database
    # or the data directory: at zero, nothing can be saved and every question fails.
    min_free_mb: float = Field(64.0, ge=0)
    # The audit log (admin actions): entries older than this go (`sift serve` daily, and
    # `sift db purge`); 0 keeps them forever.
    audit_retention_days: float = Field(365.0, ge=0)


class ChatSettings(_Section):
    """Limits shared by the chat surfaces (the defaults are ChatLimits', which tests build)."""

    quota_per_minute: int = Field(ChatLimits.quota_per_minute, ge=1)
    max_message_chars: int = Field(ChatLimits.max_message_chars, ge=10)
    history_turns: int = Field(ChatLimits.history_turns, ge=0, le=100)
    # Questions, votes and clicks in progress per process; over it an event is left for the
    # platform to deliver again (Slack), or the person is asked to retry (buttons, Teams).
    max_in_flight: int = Field(500, ge=1)


class FilesSettings(_Section):
    """Files attached to a question (docs/files-in-questions.md): what is read, up to what."""

    enabled: bool = True
    # Claude takes an image of at most 5 MB and 8000 pixels a side.
    max_image_bytes: int = Field(5 * 1024 * 1024, ge=1024, le=5 * 1024 * 1024)
    max_image_side: int = Field(8000, ge=16, le=8000)
    max_pixels: int = Field(25_000_000, ge=256, le=64_000_000)  # decoded, before any decode
    max_text_bytes: int = Field(1024 * 1024, ge=1024)
    max_pdf_bytes: int = Field(10 * 1024 * 1024, ge=1024)
    read_chars: int = Field(4000, ge=100, le=50_000)  # the first part that joins the question
    max_files: int = Field(4, ge=1, le=20)
    types: tuple[str, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp",
                              "text/plain", "text/markdown", "text/csv", "application/json",
                              "application/pdf")
    ocr_timeout_s: float = Field(20.0, gt=0)


class ABSettings(_Section):
    fast_share: float = Field(0.0, ge=0.0, le=1.0)


class SourceSettings(_Section):
    """One `[[sources]]` table: what every source has, plus its kind's own table
    (`[sources.http]`, `[sources.confluence]`, …) validated by the connector registry."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    kind: str
    path: Path | None = None
    url: str = ""
    token: SecretStr | None = None
    interval_minutes: float | None = Field(15.0, gt=0)
    cron: str = ""  # when set, replaces interval_minutes
    full_cron: str = "0 3 * * *"  # the slower pass that also prunes deleted documents
    # Access groups of a document that declares none (an empty or misspelt `access` is not
    # "none": such a document is restricted to nobody until fixed).
    default_access: list[str] = Field(default_factory=lambda: ["public"], min_length=1)
    # Verification (docs/answers-loop.md): who keeps the source's documents true (a Slack
    # user id, told when one is due or voted down), and how long a document stays verified
    # after it last changed or its owner confirmed it; unset: never due.
    owner: str = ""
    review_days: int | None = Field(None, ge=1)
    options: SerializeAsAny[ConnectorSettings] = Field(default_factory=ConnectorSettings)

    @model_validator(mode="before")
    @classmethod
    def _kind_table(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        kind = data.get("kind")
        spec = registry.spec(kind) if isinstance(kind, str) else None
        if spec is None:
            raise PydanticCustomError("unknown_kind", "unknown kind; the known kinds are "
                                      "{known}", {"known": registry.known_kinds(),
                                                  "inner_loc": ("kind",),
                                                  "inner_input": kind})
        data = dict(data)
        table = data.pop(spec.kind, None) or data.pop("options", None) or {}
        if isinstance(table, BaseModel):
            table = table.model_dump()
        try:
            data["options"] = spec.settings.model_validate(table)
        except ValidationError as exc:  # re-raised with its place, for _explain
            first = exc.errors()[0]
            raise PydanticCustomError("kind_table", "{msg}", {
                "msg": first["msg"], "inner_loc": (spec.kind, *first["loc"]),
                "inner_type": first["type"], "inner_input": first.get("input")}) from exc
        return data

    def connector_config(self) -> SourceConfig:
        secret = self.token.get_secret_value() if self.token else None
        return SourceConfig(self.name, url=self.url, token=secret, path=self.path,
                            default_access=tuple(self.default_access))


class SyncSettings(_Section):
    """Chunking and batching of the sync job, and its schedule inside `sift serve`.

    Sizes are approximate tokens (about 1/1.2 of MiniLM word pieces, see sync/blocks.py).
    Unset, the target is 400, or less so that a chunk plus its title/section prefix fits
    the local model's window (max_seq_length 256 -> 200): the vector never sees what the
    model truncates, and on the AWS eval set 400-token chunks retrieved worse than 200.
    """

    target_tokens: int | None = Field(None, ge=32, le=8000)
    overlap_tokens: int | None = Field(None, ge=0, le=2000)  # unset: target / 8
    min_tokens: int | None = Field(None, ge=0, le=2000)  # smaller pieces merge; unset: target / 8
    # Chunks per embedding call. The embedder sorts each call's texts by length before batching
    # them, so a wide call pads less: 1,024 pads 6.8% of the AWS chunks' tokens, 256 8.2%, 64
    # 18%; the AWS pages synced 6% quicker in calls of 1,024 than of 256 (bench/README.md). A
    # stop and the progress come between calls: about ten seconds apart on a 2-core machine.
    embed_batch: int = Field(1024, ge=1, le=4096)
    max_file_mb: float = Field(50.0, gt=0)  # larger documents are skipped and reported by name
    checkpoint_overlap_s: float = Field(300.0, ge=0)
    misfire_grace_s: float = Field(300.0, gt=0)
    sync_on_start: bool = True  # `sift serve` syncs every source in the background at start


class AnswerSettings(_Section):
    """`[answers]`: approved answers (the answers loop) stay verified this long after their
    approval or their owner's last confirmation; their owner is the person who answered."""

    review_days: int | None = Field(180, ge=1)
    # Owners hear of documents due for review at start-up and on this schedule (5-field cron,
    # the server's local time); each document once until it is verified again.
    remind_cron: str = "0 9 * * *"
    # The weekly digest for the knowledge team: a Slack channel id (C…), or unset for none.
    # It quotes questions asked anywhere, as the console's Gaps page does: pick a channel
    # only that team reads.
    digest_to: str = Field("", pattern=r"^([CG][A-Z0-9]{6,})?$")
    digest_cron: str = "0 9 * * 1"

    @field_validator("remind_cron", "digest_cron")
    @classmethod
    def _cron(cls, value: str, info: ValidationInfo) -> str:
        from sync.schedule import crontab

        try:
            crontab(value)
        except ValueError as exc:
            raise ValueError(f"[answers] {info.field_name} = {value!r} is not a 5-field cron "
                             f"expression such as '0 9 * * 1' ({exc})") from None
        return value


class OutputSettings(_Section):
    """What an answer may link to; every other link is shown as inert text (docs/security.md)."""

    allowed_hosts: list[str] | None = None  # unset: the hosts of the sources' `url` settings


class ChannelSettings(_Section):
    """One [[channels]] table: how Sift behaves in one conversation (see docs/channels.md)."""

    platform: str  # a surface with channel policies (bot/surfaces.py): "slack", "teams"
    channel: str = Field(min_length=1)
    label: str = ""
    sources: list[str] = Field(default_factory=list)
    respond: Literal["mention", "questions"] = "mention"
    only_when_confident: bool = False
    escalate_to: list[str] = Field(default_factory=list)
    private_answers: bool = False
    follow_ups: bool = True
    enabled: bool = True
    audience: list[str] = Field(default_factory=list)
    holdout: float = 0.0  # help channels: the share Sift stays silent on (docs/answers-loop.md)
    experts: list[str] = Field(default_factory=list)  # their replies captured here: approved

    @field_validator("platform")
    @classmethod
    def _known_platform(cls, value: str) -> str:
        from bot import surfaces  # the registry imports the surfaces' settings sections

        names = list(surfaces.policy_platforms())
        if value not in names:
            raise ValueError(f"{value!r} is not a platform with channel policies; one of: "
                             f"{', '.join(names)}")
        return value

class GroupSettings(_Section):
    """One Sift access group (`[[groups]]`): who belongs, by any of these rules."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    emails: list[str] = Field(default_factory=list)
    domains: list[str] = Field(default_factory=list)  # "example.com": every address there
    slack_usergroups: list[str] = Field(default_factory=list)  # handles, without the "@"
    entra_groups: list[str] = Field(default_factory=list)  # Microsoft Entra group object ids
    entra_members: list[str] = Field(default_factory=list)  # AAD object ids, without Graph
    # Groups of the platforms Sift reads, by the name the platform shows: shorthand for the
    # principals their connectors write ("github:team:acme/platform", "jira:group:it-staff",
    # "servicenow:group:Service Desk").
    github_teams: list[str] = Field(default_factory=list)  # "org/team-slug"
    jira_groups: list[str] = Field(default_factory=list)
    servicenow_groups: list[str] = Field(default_factory=list)
    # Platform principals a connector puts in `access` ("confluence:group:hr",
    # "confluence:space:HR", "notion:workspace"): this group's members may read them.
    principals: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name.lower() == "public":
            raise ValueError("'public' is everyone already; it cannot be declared")
        return name


class PermissionSettings(_Section):
    """How Sift learns who someone is (identity lookups are cached this long)."""

    cache_ttl_s: float = Field(300.0, ge=0)
    graph_url: str = GRAPH_URL
    login_url: str = PUBLIC_CLOUD


class OidcSettings(_Section):
    """Company single sign-on for the console (OpenID Connect: authorization code with PKCE).
    Off while `issuer` is empty; whoever matches no admin or viewer rule is refused."""

    issuer: str = ""  # e.g. https://login.example.com/realms/acme (discovery lives below it)
    client_id: str = ""
    client_secret: SecretStr | None = None  # confidential clients; public ones rely on PKCE
    # The callback as browsers reach it (behind a proxy); "" derives it from the request.
    redirect_url: str = ""
    scopes: list[str] = Field(default_factory=lambda: ["openid", "email", "profile"])
    admin_emails: list[str] = Field(default_factory=list)
    admin_domains: list[str] = Field(default_factory=list)  # "example.com"
    admin_groups: list[str] = Field(default_factory=list)  # values of `groups_claim`
    viewer_emails: list[str] = Field(default_factory=list)
    viewer_domains: list[str] = Field(default_factory=list)
    viewer_groups: list[str] = Field(default_factory=list)
    groups_claim: str = "groups"  # the ID token claim listing the person's groups
    # The claim of its access tokens (MCP and the API, as OAuth 2.1) naming the person.
    email_claim: str = "email"
    timeout_s: float = Field(10.0, gt=0)

    @property
    def enabled(self) -> bool:
        return bool(self.issuer)


class AdminSettings(_Section):
    """The web console under /admin: off unless a password or OIDC is set. The passwords are
    hashed as the settings load: the plain text is never kept, so nothing drops it later."""

    password: Password = None  # role "admin"
    viewer_password: Password = None  # role "viewer": reads, cannot act
    # Cookies are Secure whenever the request came over HTTPS (directly, or through a proxy
    # in SIFT_TRUSTED_PROXIES); True marks them Secure always, whatever the request says.
    secure_cookie: bool = False
    session_minutes: float = Field(480.0, gt=0)  # idle time before signing in again
    login_attempts: int = Field(5, ge=1)  # failed sign-ins per address per window
    login_window_s: float = Field(300.0, gt=0)
    # Estimated cost: USD per million input and output tokens, by model-name prefix.
    prices: dict[str, tuple[float, float]] = Field(default_factory=lambda: {
        "claude-haiku": (1.0, 5.0), "claude-sonnet": (3.0, 15.0), "claude-opus": (15.0, 75.0)})
    oidc: OidcSettings = Field(default_factory=OidcSettings)


class MetricsSettings(_Section):
    """GET /metrics (docs/operating.md): with a token, Bearer-authenticated from anywhere;
    without one, loopback clients only."""

    token: SecretStr | None = None


class TracingSettings(_Section):
    """OpenTelemetry traces: on when OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ variant) is
    set, with the standard OTEL_* variables; spans carry no question text unless allowed."""

    question_text: bool = False


Config = TypeVar("Config")


def to_config(section: BaseModel, config: type[Config], **overrides: Any) -> Config:
    """A settings section as the plain config rag/ and sync/ take: the fields they share by
    name, plus `overrides`. The one conversion, so the two sets of defaults cannot drift
    apart unnoticed (tests/bot/test_config_bridge.py holds them equal)."""
    names = {f.name for f in dataclasses.fields(config)}  # type: ignore[arg-type]
    return config(**{**section.model_dump(include=names), **overrides})


def sample_source() -> SourceSettings:
    return SourceSettings(name="sample", kind="folder", path=SAMPLE_KNOWLEDGE)


def sample_groups() -> list[GroupSettings]:
    """The access groups the sample knowledge base restricts documents to, with the sample's
    own authors as members, so that `sift ask --as priya@northwind-relay.example` shows what
    a permission changes (README: "Permissions in the sample")."""
    domain = "northwind-relay.example"
    return [GroupSettings(name="engineering", emails=[f"priya@{domain}", f"joao@{domain}"]),
            GroupSettings(name="security", emails=[f"elena@{domain}", f"ravi@{domain}"])]


class Settings(BaseSettings):
    """All of Sift's settings. Flat names are the documented public interface (SIFT_*)."""

    model_config = SettingsConfigDict(
        env_prefix="SIFT_",
        env_nested_delimiter="__",
        extra="forbid",
        populate_by_name=True,
        frozen=True,
    )

    config: Path | None = None
    data_dir: Path = Path(".sift")
    database_url: str = ""
    log_level: str = "INFO"
    log_format: Literal["text", "json"] = "text"  # json: one object per line (docs/operating.md)
    access_log: bool = True  # `sift serve`: a line per HTTP request (path without its query)
    mode: Literal["accurate", "fast"] | None = None  # None: accurate when an LLM is configured

    weaviate_url: str = ""
    weaviate_api_key: SecretStr | None = None
    weaviate_binary: Path | None = None

    anthropic_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("SIFT_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY",
                                            "anthropic_api_key")
    )
    anthropic_base_url: str = ""

    # The chat surfaces' flat credentials (SIFT_SLACK_BOT_TOKEN, SIFT_TEAMS_APP_ID) are added
    # from the surface registry below, each surface declaring its own (bot/<surface>/spec.py).

    host: str = "127.0.0.1"
    port: int = Field(3978, ge=0, le=65535)
    # Behind a reverse proxy (docs/operating.md): the proxies' addresses or CIDR ranges, whose
    # X-Forwarded-For/-Proto/-Host say who the client is; from anyone else they are ignored.
    # In the environment: comma-separated (SIFT_TRUSTED_PROXIES=10.0.0.0/8,192.168.1.5).
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # The address browsers reach Sift at (https://sift.example.com): the OIDC redirect and
    # the links Sift prints; "" derives it from each request.
    public_url: str = ""
    # Processes serving SIFT_PORT: one uses one core for Sift's own work (see bot/workers.py).
    workers: int = Field(1, ge=1, le=64)

    weaviate: WeaviateSettings = Field(default_factory=WeaviateSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    grading: GradingSettings = Field(default_factory=GradingSettings)
    selection: SelectionSettings = Field(default_factory=SelectionSettings)
    prior: PriorSettings = Field(default_factory=PriorSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    files: FilesSettings = Field(default_factory=FilesSettings)
    ab: ABSettings = Field(default_factory=ABSettings)
    # The chat surfaces' own tables ([slack], [teams], [web_chat]) are added from the surface
    # registry below: a new surface brings its table without an edit here.
    sync: SyncSettings = Field(default_factory=SyncSettings)
    sources: list[SourceSettings] = Field(default_factory=list)
    output: OutputSettings = Field(default_factory=OutputSettings)
    answers: AnswerSettings = Field(default_factory=AnswerSettings)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part for part in re.split(r"[,\s]+", value) if part]
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        settings_check.parse_networks(value)  # ValueError names the entry at fault
        return [entry.strip() for entry in value]

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str) -> str:
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path.strip("/") \
                or parts.query:
            raise ValueError("it must be the site's address alone, such as "
                             "https://sift.example.com")
        return value.rstrip("/")

    @field_validator("sources")
    @classmethod
    def _distinct_names(cls, sources: list[SourceSettings]) -> list[SourceSettings]:
        # A second source of the same name would replace the first, and a full pass would
        # then delete the first one's documents from the index.
        names = [s.name for s in sources]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"two [[sources]] share the name '{twice[0]}'; give each a "
                             "different name")
        return sources
    channels: list[ChannelSettings] = Field(default_factory=list)
    groups: list[GroupSettings] = Field(default_factory=list)
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    admin: AdminSettings = Field(default_factory=AdminSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)

    @field_validator("groups")
    @classmethod
    def _unique_groups(cls, groups: list[GroupSettings]) -> list[GroupSettings]:
        names = [g.name for g in groups]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"group {twice[0]!r} is declared more than once")
        return groups

    @model_validator(mode="before")
    @classmethod
    def _sample_groups(cls, data: Any) -> Any:
        # The sample (no [[sources]]) comes with the groups its documents name, unless the
        # configuration declares groups of its own. Before validation: the settings are
        # frozen once built.
        if isinstance(data, dict) and not data.get("sources") and not data.get("groups"):
            return {**data, "groups": sample_groups()}
        return data

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # sift.toml arrives as init keywords; the environment wins over it.
        return env_settings, init_settings

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'sift.db'}"

    @property
    def resolved_sources(self) -> list[SourceSettings]:
        return self.sources or [sample_source()]

    @property
    def llm_configured(self) -> bool:
        if self.llm.provider != "anthropic":  # named on purpose: its credentials are checked
            return True
        return self.anthropic_api_key is not None or bool(self.anthropic_base_url)



def _with_surfaces(base: type[Settings]) -> type[Settings]:
    """Settings with a field per chat surface's own table and per credential, from the surface
    registry (so a new surface's SIFT_<NAME>__*, [<name>] and SIFT_<NAME>_<SECRET> are
    settings without an edit here)."""
    from pydantic import create_model

    from bot import surfaces

    fields: dict[str, Any] = {
        spec.section_name: (spec.section, Field(default_factory=spec.section))
        for spec in surfaces.SPECS}
    for spec in surfaces.SPECS:  # flat: the names the platforms' own guides use
        for name, info in (spec.credentials.model_fields if spec.credentials else {}).items():
            fields[spec.flat_name(name)] = (info.annotation, info)
    derived: type[Settings] = create_model(
        "Settings", __base__=base, __module__=__name__, __doc__=base.__doc__, **fields)
    return derived


if not TYPE_CHECKING:
    Settings = _with_surfaces(Settings)


def _env_name(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if not isinstance(p, int)]
    return "SIFT_" + "__".join(parts).upper() if parts else "SIFT_*"


def _env_origin(loc: tuple[Any, ...]) -> str | None:
    """The SIFT_* variable that supplied `loc` (itself or a JSON-valued parent), if any."""
    present = {name.upper() for name in os.environ}
    for end in range(len(loc), 0, -1):
        name = _env_name(loc[:end])
        if name in present:
            return name
    return None


def _in_toml(data: Any, loc: tuple[Any, ...]) -> bool:
    for part in loc:
        in_dict = isinstance(data, dict) and part in data
        in_list = isinstance(data, list) and isinstance(part, int) and part < len(data)
        if not (in_dict or in_list):
            return False
        data = data[part]
    return True


def _origin(loc: tuple[Any, ...], data: dict[str, Any], toml_path: Path | None) -> str:
    """Where the bad value came from, so the person knows which line to fix."""
    env = _env_origin(loc)
    if env is not None:
        return f"from the environment variable {env}"
    if toml_path is not None and _in_toml(data, loc):
        return f"in {toml_path}"
    return f"({_env_name(loc)})"


def _explain(error: ValidationError, data: dict[str, Any], toml_path: Path | None) -> str:
    errors = error.errors()

    def kind(e: Any) -> Any:  # a source's kind table reports its own place (SourceSettings)
        return (e.get("ctx") or {}).get("inner_type", e.get("type"))

    # A misspelt key also makes the real one "missing": the typo is the thing to name.
    first = next((e for e in errors if kind(e) == "extra_forbidden"), errors[0])
    inner = first.get("ctx") or {}
    loc = tuple(first.get("loc", ())) + tuple(inner.get("inner_loc", ()))
    key = ".".join(str(p) for p in loc) or "settings"
    if kind(first) == "extra_forbidden":
        return _unknown_key(loc, key, data, toml_path)
    value = inner.get("inner_input", first.get("input"))
    shown = "" if isinstance(value, dict | list) or value is None else f" (got {value!r})"
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ").rstrip(".")
    return f"Setting '{key}' {_origin(loc, data, toml_path)} is invalid{shown}: {message}."


def _unknown_key(loc: tuple[Any, ...], key: str, data: dict[str, Any],
                 toml_path: Path | None) -> str:
    valid = settings_check.keys_at(Settings, loc[:-1])
    env = _env_origin(loc)
    if env is not None:
        names = [_env_name((*loc[:-1], k)) for k in valid]
        return f"Unknown setting {env} in the environment{settings_check.nearest(env, names)}"
    where = f" in {toml_path}" if toml_path and _in_toml(data, loc) else ""
    hint = settings_check.nearest(str(loc[-1]), valid).replace("mean ", "mean '", 1)
    hint = hint[:-1] + "'?" if hint else "; check its spelling against docs/configuration.md."
    return f"Unknown setting '{key}'{where}{hint}"


def config_path(config: Path | None = None) -> Path | None:
    """The sift.toml to read: --config, else $SIFT_CONFIG, else ./sift.toml if there is one."""
    named = config or os.environ.get("SIFT_CONFIG")
    if named:
        return Path(named)
    local = Path("sift.toml")
    return local if local.is_file() else None


def _check(settings: Settings) -> None:
    problem = (settings_check.log_level_problem(settings.log_level)
               or settings_check.database_url_problem(settings.database_url))
    if problem:
        raise ConfigError(problem, user_message=problem)


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        raise ConfigError(f"Config file {path} does not exist (from --config or SIFT_CONFIG).",
                          user_message=f"Config file {path} does not exist.") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Config file {path} is not valid TOML: {exc}.",
                          user_message=f"Config file {path} is not valid TOML: {exc}.") from exc


def build_settings(config: Path | None = None) -> Settings:
    """Validate settings from `config` (or SIFT_CONFIG) and the environment; raise ConfigError."""
    path = config_path(config)
    data = read_toml(path) if path else {}
    unknown = settings_check.unknown_env(os.environ, Settings)
    if unknown:
        raise ConfigError(unknown, user_message=unknown)
    typo = settings_check.unknown_source_key(data, SourceSettings)
    if typo is not None:
        loc = ("sources", *typo)
        sentence = _unknown_key(loc, ".".join(map(str, loc)), data, path)
        raise ConfigError(sentence, user_message=sentence)
    try:
        settings = Settings(**data)
    except ValidationError as exc:
        sentence = _explain(exc, data, path)
        raise ConfigError(sentence, user_message=sentence) from exc
    _check(settings)
    return settings.model_copy(update={"config": path})
