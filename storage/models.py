"""The SQLAlchemy models: Sift's schema, mirrored exactly by the Alembic migrations."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, ClassVar, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from storage.columns import UTCDateTime

# Named constraints keep migrations portable (SQLite batch mode needs names to alter them).
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

Json = dict[str, Any]


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime(), Json: JSON()}


def table(model: type[Base]) -> Table:
    """The Core table of a model, for bulk statements and upserts."""
    return cast(Table, model.__table__)


class Interaction(Base):
    """One question and what the bot did with it. Text columns hold a hash when text is off."""

    __tablename__ = "interactions"
    __table_args__ = (
        Index("ix_interactions_message", "platform", "message_channel", "message_ref"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(index=True)
    platform: Mapped[str] = mapped_column(String(16))  # slack, teams, terminal, web
    workspace: Mapped[str] = mapped_column(String, default="")  # Slack team / Teams tenant
    channel: Mapped[str] = mapped_column(String, default="")
    thread: Mapped[str] = mapped_column(String, default="")
    user_id: Mapped[str] = mapped_column(String, default="")
    # Where the answer was posted (Slack channel + ts, Teams conversation + activity id).
    message_channel: Mapped[str | None] = mapped_column(String)
    message_ref: Mapped[str | None] = mapped_column(String)
    correlation_id: Mapped[str] = mapped_column(String(64), default="")
    question: Mapped[str] = mapped_column(Text)
    search_query: Mapped[str] = mapped_column(Text, default="")
    answer: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), index=True)
    mode: Mapped[str] = mapped_column(String(16))
    # The arm when the A/B split chose the mode; "" for explicit or default modes.
    ab_arm: Mapped[str] = mapped_column(String(16), default="", server_default="")
    policy: Mapped[str] = mapped_column(String, default="", server_default="")  # "slack:C1"
    timings_ms: Mapped[Json] = mapped_column(default=dict)  # stage -> milliseconds
    usage: Mapped[Json] = mapped_column(default=dict)  # stage -> token counts
    models: Mapped[Json] = mapped_column(default=dict)  # stage -> model id
    # The model service of those models (anthropic, bedrock, vertex, openai); "" without one.
    llm_provider: Mapped[str] = mapped_column(String(16), default="", server_default="")


class DailyOutcome(Base):
    """Questions and votes per UTC day, place, outcome and mode, kept as interactions and
    votes are written: the console's overview reads these, never the interactions."""

    __tablename__ = "daily_outcomes"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    platform: Mapped[str] = mapped_column(String(16), primary_key=True)
    channel: Mapped[str] = mapped_column(String, primary_key=True)
    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    mode: Mapped[str] = mapped_column(String(16), primary_key=True)
    ab_arm: Mapped[str] = mapped_column(String(16), primary_key=True)
    questions: Mapped[int] = mapped_column(Integer, default=0)
    up: Mapped[int] = mapped_column(Integer, default=0)
    down: Mapped[int] = mapped_column(Integer, default=0)
    voted: Mapped[int] = mapped_column(Integer, default=0)  # questions with at least one vote


class DailyTokens(Base):
    """Tokens per UTC day and model, for the overview's tokens and cost charts."""

    __tablename__ = "daily_tokens"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    model: Mapped[str] = mapped_column(String, primary_key=True)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)


class DailyLatency(Base):
    """A latency histogram per UTC day, stage and mode: bucket b holds the questions whose
    stage took [1.05**b - 1, 1.05**(b+1) - 1) ms, so percentiles over any window are read
    from a few hundred rows, within 5%."""

    __tablename__ = "daily_latency"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    stage: Mapped[str] = mapped_column(String(16), primary_key=True)
    mode: Mapped[str] = mapped_column(String(16), primary_key=True)
    ab_arm: Mapped[str] = mapped_column(String(16), primary_key=True)
    bucket: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    questions: Mapped[int] = mapped_column(Integer, default=0)


class QuestionVector(Base):
    """A gap question's embedding (float32), computed in the background for the console's
    content gaps page; it goes with its interaction."""

    __tablename__ = "question_vectors"

    interaction_id: Mapped[int] = mapped_column(
        ForeignKey("interactions.id", ondelete="CASCADE"), primary_key=True)
    model: Mapped[str] = mapped_column(String)
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class InteractionSource(Base):
    """One retrieved candidate of an interaction, with its grade and fate."""

    __tablename__ = "interaction_sources"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    interaction_id: Mapped[int] = mapped_column(
        ForeignKey("interactions.id", ondelete="CASCADE"), index=True)
    rank: Mapped[int] = mapped_column(Integer)
    chunk_id: Mapped[str] = mapped_column(String)
    doc_id: Mapped[str] = mapped_column(String, index=True)
    title: Mapped[str] = mapped_column(Text, default="")
    url: Mapped[str] = mapped_column(Text, default="")
    retrieval_score: Mapped[float] = mapped_column(Float)
    grade_score: Mapped[float | None] = mapped_column(Float)  # None: not graded / grader failed
    grade_reason: Mapped[str] = mapped_column(Text, default="")
    grade_source: Mapped[str | None] = mapped_column(String(16))  # llm, heuristic, cache, fallback
    selected: Mapped[bool] = mapped_column(Boolean, default=False)
    cited: Mapped[bool] = mapped_column(Boolean, default=False)
    citation: Mapped[int | None] = mapped_column(Integer)  # its [n] in the answer, when cited
    # Its access groups when answered: sharing re-checks them (None, from before: nobody).
    access: Mapped[list[str] | None] = mapped_column(JSON)


class Feedback(Base):
    """One person's current vote on one answer; a new vote replaces it, a retraction deletes it."""

    __tablename__ = "feedback"
    __table_args__ = (
        UniqueConstraint("interaction_id", "user_id", name="uq_feedback_interaction_user"),
        CheckConstraint("vote IN (-1, 1)", name="vote"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    interaction_id: Mapped[int] = mapped_column(
        ForeignKey("interactions.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String)
    vote: Mapped[int] = mapped_column(SmallInteger)
    channel: Mapped[str] = mapped_column(String(16))  # reaction, button, terminal
    comment: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class DocumentStats(Base):
    """Lifetime counters per document, counted once per interaction that retrieved it.

    `graded`, `graded_relevant` and `grade_score_sum` use the document's best chunk grade in
    that interaction. Thumbs count the current votes on answers that cited the document.
    Purging old interactions keeps these totals (they hold no personal data).
    """

    __tablename__ = "document_stats"

    doc_id: Mapped[str] = mapped_column(String, primary_key=True)
    title: Mapped[str] = mapped_column(Text, default="")
    url: Mapped[str] = mapped_column(Text, default="")
    retrieved: Mapped[int] = mapped_column(Integer, default=0)
    graded: Mapped[int] = mapped_column(Integer, default=0)
    graded_relevant: Mapped[int] = mapped_column(Integer, default=0)
    grade_score_sum: Mapped[float] = mapped_column(Float, default=0.0)
    # The same two, from a model's grades only (the heuristic's are low by construction).
    model_graded: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    model_grade_sum: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    selected: Mapped[int] = mapped_column(Integer, default=0)
    cited: Mapped[int] = mapped_column(Integer, default=0)
    thumbs_up: Mapped[int] = mapped_column(Integer, default=0)
    thumbs_down: Mapped[int] = mapped_column(Integer, default=0)
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]
    # Not readable by everyone: `sift report` hides its title unless --include-restricted.
    restricted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class DocumentGradeDay(Base):
    """One document's graded retrievals on one UTC day, counted as answers are recorded: the
    evidence the learned prior weighs, read in one row per day however often it is retrieved.

    Counted as `document_stats.graded` is (its best chunk's grade in each answer) but only from
    the graders whose grades are evidence (not the heuristic's); `relevant` uses the relevance
    threshold in force when the answer was recorded. Purging interactions keeps these (no
    personal data), so the prior does not forget what it learned.
    """

    __tablename__ = "document_grade_days"

    doc_id: Mapped[str] = mapped_column(String, primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    graded: Mapped[int] = mapped_column(Integer, default=0)
    relevant: Mapped[int] = mapped_column(Integer, default=0)
    first_at: Mapped[datetime]
    last_at: Mapped[datetime]


class DocumentVote(Base):
    """A person's current vote on an answer, once per document the answer cited: kept with
    the vote (a new vote replaces it, a retraction deletes it), so the learned prior reads a
    document's votes without going through every answer that ever cited it."""

    __tablename__ = "document_votes"

    doc_id: Mapped[str] = mapped_column(String, primary_key=True)
    interaction_id: Mapped[int] = mapped_column(
        ForeignKey("interactions.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(String, primary_key=True)
    vote: Mapped[int] = mapped_column(SmallInteger)
    updated_at: Mapped[datetime]  # the vote's, as in feedback


class DocumentOverride(Base):
    """An admin's decision about one document: pin, boost, demote or hide (one per document)."""

    __tablename__ = "document_overrides"
    __table_args__ = (CheckConstraint("kind IN ('pin', 'boost', 'demote', 'hide')", name="kind"),)

    doc_id: Mapped[str] = mapped_column(String, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), index=True)
    factor: Mapped[float | None] = mapped_column(Float)  # boost/demote; None: the default
    note: Mapped[str] = mapped_column(Text, default="")
    set_by: Mapped[str] = mapped_column(String, default="")
    updated_at: Mapped[datetime]


class GradeCacheEntry(Base):
    """A grade, valid only for the same question, chunk content and grader version."""

    __tablename__ = "grade_cache"

    question_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    chunk_id: Mapped[str] = mapped_column(String, primary_key=True)
    content_hash: Mapped[str] = mapped_column(String, primary_key=True)
    grader_version: Mapped[str] = mapped_column(String, primary_key=True)
    score: Mapped[float] = mapped_column(Float)
    reason: Mapped[str] = mapped_column(Text, default="")
    model: Mapped[str] = mapped_column(String, default="")
    created_at: Mapped[datetime] = mapped_column(index=True)
    hits: Mapped[int] = mapped_column(Integer, default=0)


class SyncRun(Base):
    __tablename__ = "sync_runs"
    __table_args__ = (Index("ix_sync_runs_source_started", "source", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(String)
    full: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(16))  # running, then what the job reports
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    added: Mapped[int] = mapped_column(Integer, default=0)
    updated: Mapped[int] = mapped_column(Integer, default=0)
    deleted: Mapped[int] = mapped_column(Integer, default=0)
    unchanged: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    chunks_written: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[list[str]] = mapped_column(JSON, default=list)
    cursor: Mapped[str | None] = mapped_column(Text, nullable=True)  # a platform's delta link


class SourceDocument(Base):
    """What the last sync saw of one document: its content hash decides re-indexing."""

    __tablename__ = "source_documents"

    source: Mapped[str] = mapped_column(String, primary_key=True)
    doc_id: Mapped[str] = mapped_column(String, primary_key=True)
    content_hash: Mapped[str] = mapped_column(String)
    updated_at: Mapped[datetime | None]  # the document's own modification time
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    last_synced: Mapped[datetime]
    status: Mapped[str] = mapped_column(String(16))  # ok, failed
    error: Mapped[str] = mapped_column(Text, default="")
    restricted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Indexed, but something is wrong with it (a misspelt `access`): the console lists it.
    warning: Mapped[str] = mapped_column(Text, default="", server_default="")


class EventKey(Base):
    """A key that lives until `expires_at`: a claimed platform event id (a redelivery is
    dropped), a counted question or failed sign-in, or short-lived state every replica must
    see (console sessions, a pending sign-in, a pending comment) with its JSON `value`."""

    __tablename__ = "event_keys"

    key: Mapped[str] = mapped_column(String, primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(index=True)
    value: Mapped[str | None] = mapped_column(Text, nullable=True)


class ConversationTurn(Base):
    """Recent turns of a conversation (thread or chat), for rewriting follow-up questions."""

    __tablename__ = "conversation_turns"
    __table_args__ = (Index("ix_conversation_turns_key_id", "conversation_key", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_key: Mapped[str] = mapped_column(String)
    role: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(index=True)


class ChannelPolicyRow(Base):
    """How Sift behaves in one conversation (`*`: channels without one, `@direct`: DMs)."""

    __tablename__ = "channel_policies"

    platform: Mapped[str] = mapped_column(String(16), primary_key=True)
    channel: Mapped[str] = mapped_column(String, primary_key=True)
    label: Mapped[str] = mapped_column(Text, default="")
    settings: Mapped[Json] = mapped_column(default=dict)  # every other field of the policy
    updated_at: Mapped[datetime]


class AuditEntry(Base):
    """One admin action: who (an account, a role, or the command line), from where, what,
    and the value before and after (never a secret: tokens and passwords are not stored)."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(index=True)
    actor: Mapped[str] = mapped_column(String)
    address: Mapped[str] = mapped_column(String(64), default="")
    action: Mapped[str] = mapped_column(String(64), index=True)
    target: Mapped[str] = mapped_column(String, default="")
    before: Mapped[Json | None] = mapped_column(nullable=True)
    after: Mapped[Json | None] = mapped_column(nullable=True)


class AnswerDraft(Base):
    """A person's reply in a thread, captured as an answer (a ✅, "Save to Sift"): pending
    until a reviewer approves it (then indexed in the `answers` source) or rejects it."""

    __tablename__ = "answer_drafts"
    __table_args__ = (UniqueConstraint("platform", "channel", "message_ref"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(index=True)
    status: Mapped[str] = mapped_column(String(16), index=True)  # pending, approved, rejected
    captured_by: Mapped[str] = mapped_column(String(16))  # reaction, shortcut
    platform: Mapped[str] = mapped_column(String(16))
    workspace: Mapped[str] = mapped_column(String, default="")
    channel: Mapped[str] = mapped_column(String)
    channel_name: Mapped[str] = mapped_column(String, default="")
    channel_kind: Mapped[str] = mapped_column(String(16))  # public, private, direct
    thread: Mapped[str] = mapped_column(String)
    message_ref: Mapped[str] = mapped_column(String)  # the accepted reply
    asker: Mapped[str] = mapped_column(String, default="")
    author: Mapped[str] = mapped_column(String)
    author_name: Mapped[str] = mapped_column(String, default="")
    answered_at: Mapped[datetime]
    link: Mapped[str] = mapped_column(Text, default="")
    question: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(Text)
    reply: Mapped[str] = mapped_column(Text)  # the reply as written, kept beside any rewrite
    context: Mapped[str] = mapped_column(Text, default="")
    access: Mapped[list[str]] = mapped_column(JSON, default=list)
    interaction_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reviewed_by: Mapped[str] = mapped_column(String, default="")
    reviewed_at: Mapped[datetime | None]
    reason: Mapped[str] = mapped_column(Text, default="")
    # The re-ask check after approval: answered, not_answered, failed ("" before it ran).
    reask: Mapped[str] = mapped_column(String(16), default="")


class ClosedGap(Base):
    """A gap's question answered since: the re-ask check after an approved answer asked it
    again and Sift answered. The gaps page leaves it out; an unanswered re-ask closes nothing."""

    __tablename__ = "closed_gaps"

    interaction_id: Mapped[int] = mapped_column(
        ForeignKey("interactions.id", ondelete="CASCADE"), primary_key=True)
    draft_id: Mapped[int] = mapped_column(Integer)
    closed_at: Mapped[datetime]


class HelpQuestion(Base):
    """A top-level question in a help channel (`respond = "questions"`) and what became of
    it: answered by Sift (`arm` sift) or held out on purpose (`arm` holdout: Sift stayed
    silent, the counterfactual), the first reply by a person, and who resolved it."""

    __tablename__ = "help_questions"
    __table_args__ = (UniqueConstraint("platform", "channel", "thread"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    asked_at: Mapped[datetime] = mapped_column(index=True)
    platform: Mapped[str] = mapped_column(String(16))
    channel: Mapped[str] = mapped_column(String)
    thread: Mapped[str] = mapped_column(String)  # the question's own message id
    asker: Mapped[str] = mapped_column(String)
    arm: Mapped[str] = mapped_column(String(16))  # sift, holdout
    interaction_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    answered_at: Mapped[datetime | None]  # Sift's answer (arm sift, when it said something)
    sift_status: Mapped[str] = mapped_column(String(16), default="")  # the answer's status
    first_reply_at: Mapped[datetime | None]  # the first reply by a person other than the asker
    help_requested: Mapped[bool] = mapped_column(Boolean, default=False)  # "Still need help?"
    resolved_by: Mapped[str] = mapped_column(String(16), default="")  # "", sift, person
    resolved_at: Mapped[datetime | None]


class AccessTokenRow(Base):
    """A personal access token for the API and MCP: only the SHA-256 of its secret is kept
    (the secret is shown once), with the email it acts as, its expiry and its revocation."""

    __tablename__ = "access_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)  # hex SHA-256
    hint: Mapped[str] = mapped_column(String(32))  # the token's first characters, to tell it
    email: Mapped[str] = mapped_column(String, index=True)
    label: Mapped[str] = mapped_column(String, default="")
    created_by: Mapped[str] = mapped_column(String, default="")
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(nullable=True)


class DocumentReview(Base):
    """An owner's word on one document or approved answer: still true as of `verified_at`
    (None: never confirmed; its own last change counts), and when its owner was last told it
    is due, so a reminder goes once per review period."""

    __tablename__ = "document_reviews"

    doc_id: Mapped[str] = mapped_column(String, primary_key=True)
    source: Mapped[str] = mapped_column(String)
    verified_at: Mapped[datetime | None]
    verified_by: Mapped[str] = mapped_column(String, default="", server_default="")
    reminded_at: Mapped[datetime | None]
