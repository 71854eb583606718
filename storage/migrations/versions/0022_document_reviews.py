"""document_reviews: an owner's confirmation that a document (or an approved answer) is still
true, and when its owner was last reminded, for verification and review dates.

Revision ID: 0022
Revises: 0019
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "document_reviews",
        sa.Column("doc_id", sa.String(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("verified_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("verified_by", sa.String(), nullable=False, server_default=""),
        sa.Column("reminded_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("doc_id"))


def downgrade() -> None:
    op.drop_table("document_reviews")
