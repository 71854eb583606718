"""answer_drafts and closed_gaps: people's replies captured as answers (a ✅ from the asker, "Save to Sift"),
pending review, then approved (indexed in the built-in `answers` source) or rejected; and the
gap questions an approved answer's re-ask check found answered.

Revision ID: 0018
Revises: 0016 (re-chained after 0017 at the merge)
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "answer_drafts", sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("captured_by", sa.String(length=16), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("channel_name", sa.String(), nullable=False),
        sa.Column("channel_kind", sa.String(length=16), nullable=False),
        sa.Column("thread", sa.String(), nullable=False),
        sa.Column("message_ref", sa.String(), nullable=False),
        sa.Column("asker", sa.String(), nullable=False),
        sa.Column("author", sa.String(), nullable=False),
        sa.Column("author_name", sa.String(), nullable=False),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("link", sa.Text(), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("reply", sa.Text(), nullable=False),
        sa.Column("context", sa.Text(), nullable=False),
        sa.Column("access", sa.JSON(), nullable=False),
        sa.Column("interaction_id", sa.Integer(), nullable=True),
        sa.Column("reviewed_by", sa.String(), nullable=False),
        sa.Column("reviewed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("reask", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answer_drafts")),
        sa.UniqueConstraint("platform", "channel", "message_ref",
                            name=op.f("uq_answer_drafts_platform")))
    op.create_index(op.f("ix_answer_drafts_created_at"), "answer_drafts", ["created_at"])
    op.create_index(op.f("ix_answer_drafts_status"), "answer_drafts", ["status"])
    op.create_table(
        "closed_gaps", sa.Column("interaction_id", sa.Integer(), nullable=False),
        sa.Column("draft_id", sa.Integer(), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["interaction_id"], ["interactions.id"],
                                name=op.f("fk_closed_gaps_interaction_id_interactions"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("interaction_id", name=op.f("pk_closed_gaps")))


def downgrade() -> None:
    op.drop_table("closed_gaps")
    op.drop_index(op.f("ix_answer_drafts_status"), table_name="answer_drafts")
    op.drop_index(op.f("ix_answer_drafts_created_at"), table_name="answer_drafts")
    op.drop_table("answer_drafts")
