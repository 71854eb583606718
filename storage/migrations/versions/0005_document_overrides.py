"""document_overrides: an admin's pin, boost, demote or hide of one document.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "document_overrides",
        sa.Column("doc_id", sa.String(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("factor", sa.Float(), nullable=True),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("set_by", sa.String(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('pin', 'boost', 'demote', 'hide')",
                           name=op.f("ck_document_overrides_kind")),
        sa.PrimaryKeyConstraint("doc_id", name=op.f("pk_document_overrides")),
    )
    op.create_index(op.f("ix_document_overrides_kind"), "document_overrides", ["kind"])


def downgrade() -> None:
    op.drop_index(op.f("ix_document_overrides_kind"), table_name="document_overrides")
    op.drop_table("document_overrides")
