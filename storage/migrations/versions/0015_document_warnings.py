"""source_documents.warning: what a sync found wrong with a document it still indexed (a
misspelt or empty `access` in its front matter: visible to nobody until fixed), so the
console's Sources page can list it beside the documents that failed.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("source_documents") as batch:
        batch.add_column(sa.Column("warning", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("source_documents") as batch:
        batch.drop_column("warning")
