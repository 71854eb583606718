"""channel_policies; interactions.policy; interaction_sources.citation (its [n] in the answer).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "channel_policies",
        sa.Column("platform", sa.String(16), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("platform", "channel", name=op.f("pk_channel_policies")),
    )
    with op.batch_alter_table("interactions") as batch:
        batch.add_column(sa.Column("policy", sa.String(), nullable=False, server_default=""))
    with op.batch_alter_table("interaction_sources") as batch:
        batch.add_column(sa.Column("citation", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("interaction_sources") as batch:
        batch.drop_column("citation")
    with op.batch_alter_table("interactions") as batch:
        batch.drop_column("policy")
    op.drop_table("channel_policies")
