"""source_documents.restricted: `sift report` lists never-retrieved documents the public may
not read as (restricted) unless --include-restricted; interaction_sources.access: a shared
answer's citations are checked against the channel again (older rows: nobody).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Rows from before this revision cannot say; they count as restricted until re-synced.
    with op.batch_alter_table("source_documents") as batch:
        batch.add_column(sa.Column("restricted", sa.Boolean(), nullable=False,
                                   server_default=sa.true()))
    with op.batch_alter_table("source_documents") as batch:
        batch.alter_column("restricted", server_default=sa.false())
    with op.batch_alter_table("interaction_sources") as batch:
        batch.add_column(sa.Column("access", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("interaction_sources") as batch:
        batch.drop_column("access")
    with op.batch_alter_table("source_documents") as batch:
        batch.drop_column("restricted")
