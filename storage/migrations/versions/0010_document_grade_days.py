"""document_grade_days: per-document, per-day tallies of graded retrievals, kept as answers are
recorded, so the learned prior reads one row per day instead of every retrieval (counted once
here from what is stored, with the default relevance threshold).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from storage.grade_days import rebuild

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "document_grade_days", sa.Column("doc_id", sa.String(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("graded", sa.Integer(), nullable=False),
        sa.Column("relevant", sa.Integer(), nullable=False),
        sa.Column("first_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("doc_id", "day", name=op.f("pk_document_grade_days")))
    rebuild(op.get_bind())


def downgrade() -> None:
    op.drop_table("document_grade_days")
