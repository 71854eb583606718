"""interactions.ab_arm: the A/B arm, when the split (not a person) chose the mode.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("interactions") as batch:
        batch.add_column(sa.Column("ab_arm", sa.String(16), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("interactions") as batch:
        batch.drop_column("ab_arm")
