"""document_stats.restricted: documents the public may not read keep their titles out of
`sift report` unless --include-restricted.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Rows from before this revision cannot say; they count as restricted (fail closed).
    with op.batch_alter_table("document_stats") as batch:
        batch.add_column(sa.Column("restricted", sa.Boolean(), nullable=False,
                                   server_default=sa.true()))
    with op.batch_alter_table("document_stats") as batch:
        batch.alter_column("restricted", server_default=sa.false())


def downgrade() -> None:
    with op.batch_alter_table("document_stats") as batch:
        batch.drop_column("restricted")
