"""event_keys.value: short-lived state kept in the database so every replica sees it (console
sessions, pending single sign-ons and comments), instead of one process's memory.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("event_keys") as batch:
        batch.add_column(sa.Column("value", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("event_keys") as batch:
        batch.drop_column("value")
