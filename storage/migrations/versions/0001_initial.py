"""Initial schema: interactions, feedback, document stats, grade cache, sync state, chat state.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _int(name: str) -> sa.Column:
    return sa.Column(name, sa.Integer(), nullable=False)


def upgrade() -> None:
    op.create_table(
        "interactions",
        sa.Column("id", sa.Integer(), nullable=False),
        _ts("created_at"),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("thread", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("message_channel", sa.String(), nullable=True),
        sa.Column("message_ref", sa.String(), nullable=True),
        sa.Column("correlation_id", sa.String(length=64), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("search_query", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("timings_ms", sa.JSON(), nullable=False),
        sa.Column("usage", sa.JSON(), nullable=False),
        sa.Column("models", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_interactions")),
    )
    op.create_index(op.f("ix_interactions_created_at"), "interactions", ["created_at"])
    op.create_index(op.f("ix_interactions_status"), "interactions", ["status"])
    op.create_index("ix_interactions_message", "interactions",
                    ["platform", "message_channel", "message_ref"])

    op.create_table(
        "interaction_sources",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("interaction_id", sa.Integer(), nullable=False),
        _int("rank"),
        sa.Column("chunk_id", sa.String(), nullable=False),
        sa.Column("doc_id", sa.String(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("retrieval_score", sa.Float(), nullable=False),
        sa.Column("grade_score", sa.Float(), nullable=True),
        sa.Column("grade_reason", sa.Text(), nullable=False),
        sa.Column("grade_source", sa.String(length=16), nullable=True),
        sa.Column("selected", sa.Boolean(), nullable=False),
        sa.Column("cited", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["interaction_id"], ["interactions.id"], ondelete="CASCADE",
                                name=op.f("fk_interaction_sources_interaction_id_interactions")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_interaction_sources")),
    )
    op.create_index(op.f("ix_interaction_sources_doc_id"), "interaction_sources", ["doc_id"])
    op.create_index(op.f("ix_interaction_sources_interaction_id"), "interaction_sources",
                    ["interaction_id"])

    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("interaction_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("vote", sa.SmallInteger(), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        sa.CheckConstraint("vote IN (-1, 1)", name=op.f("ck_feedback_vote")),
        sa.ForeignKeyConstraint(["interaction_id"], ["interactions.id"], ondelete="CASCADE",
                                name=op.f("fk_feedback_interaction_id_interactions")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_feedback")),
        sa.UniqueConstraint("interaction_id", "user_id", name="uq_feedback_interaction_user"),
    )

    op.create_table(
        "document_stats",
        sa.Column("doc_id", sa.String(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        _int("retrieved"),
        _int("graded"),
        _int("graded_relevant"),
        sa.Column("grade_score_sum", sa.Float(), nullable=False),
        _int("selected"),
        _int("cited"),
        _int("thumbs_up"),
        _int("thumbs_down"),
        _ts("first_seen"),
        _ts("last_seen"),
        sa.PrimaryKeyConstraint("doc_id", name=op.f("pk_document_stats")),
    )

    op.create_table(
        "grade_cache",
        sa.Column("question_hash", sa.String(length=64), nullable=False),
        sa.Column("chunk_id", sa.String(), nullable=False),
        sa.Column("content_hash", sa.String(), nullable=False),
        sa.Column("grader_version", sa.String(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        _ts("created_at"),
        _int("hits"),
        sa.PrimaryKeyConstraint("question_hash", "chunk_id", "content_hash", "grader_version",
                                name=op.f("pk_grade_cache")),
    )
    op.create_index(op.f("ix_grade_cache_created_at"), "grade_cache", ["created_at"])

    op.create_table(
        "sync_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("full", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        _ts("started_at"),
        _ts("finished_at", nullable=True),
        _int("added"),
        _int("updated"),
        _int("deleted"),
        _int("unchanged"),
        _int("failed"),
        _int("chunks_written"),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sync_runs")),
    )
    op.create_index("ix_sync_runs_source_started", "sync_runs", ["source", "started_at"])

    op.create_table(
        "source_documents",
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("doc_id", sa.String(), nullable=False),
        sa.Column("content_hash", sa.String(), nullable=False),
        _ts("updated_at", nullable=True),
        _int("chunk_count"),
        _ts("last_synced"),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("source", "doc_id", name=op.f("pk_source_documents")),
    )

    op.create_table(
        "event_keys",
        sa.Column("key", sa.String(), nullable=False),
        _ts("expires_at"),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_event_keys")),
    )
    op.create_index(op.f("ix_event_keys_expires_at"), "event_keys", ["expires_at"])

    op.create_table(
        "conversation_turns",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("conversation_key", sa.String(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversation_turns")),
    )
    op.create_index(op.f("ix_conversation_turns_created_at"), "conversation_turns",
                    ["created_at"])
    op.create_index("ix_conversation_turns_key_id", "conversation_turns",
                    ["conversation_key", "id"])


def downgrade() -> None:
    for table in ("conversation_turns", "event_keys", "source_documents", "sync_runs",
                  "grade_cache", "document_stats", "feedback", "interaction_sources",
                  "interactions"):
        op.drop_table(table)
