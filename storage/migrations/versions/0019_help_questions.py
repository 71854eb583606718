"""help_questions: each top-level question in a help channel, whether Sift answered it or
held it out (the channel policy's `holdout` share), and how it was resolved, for deflection
with and without Sift.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "help_questions", sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("asked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("thread", sa.String(), nullable=False),
        sa.Column("asker", sa.String(), nullable=False),
        sa.Column("arm", sa.String(length=16), nullable=False),
        sa.Column("interaction_id", sa.Integer(), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sift_status", sa.String(length=16), nullable=False),
        sa.Column("first_reply_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("help_requested", sa.Boolean(), nullable=False),
        sa.Column("resolved_by", sa.String(length=16), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_help_questions")),
        sa.UniqueConstraint("platform", "channel", "thread",
                            name=op.f("uq_help_questions_platform")))
    op.create_index(op.f("ix_help_questions_asked_at"), "help_questions", ["asked_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_help_questions_asked_at"), table_name="help_questions")
    op.drop_table("help_questions")
