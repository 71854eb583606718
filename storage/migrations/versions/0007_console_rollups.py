"""daily_outcomes, daily_tokens, daily_latency: the console overview's per-day rollups, kept
as interactions and votes are written (counted once here from what is stored);
question_vectors: content-gap question embeddings computed in the background.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from storage.rollup import rebuild

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None



def _strings(*names: str, length: int | None = 16) -> list[sa.Column[str]]:
    return [sa.Column(name, sa.String(length=length), nullable=False) for name in names]


def upgrade() -> None:
    op.create_table(
        "daily_outcomes", sa.Column("day", sa.Date(), nullable=False),
        *_strings("platform"), *_strings("channel", length=None),
        *_strings("status", "mode", "ab_arm"),
        *(sa.Column(name, sa.Integer(), nullable=False)
          for name in ("questions", "up", "down", "voted")),
        sa.PrimaryKeyConstraint("day", "platform", "channel", "status", "mode", "ab_arm",
                                name=op.f("pk_daily_outcomes")))
    op.create_table(
        "daily_tokens", sa.Column("day", sa.Date(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("day", "model", name=op.f("pk_daily_tokens")))
    op.create_table(
        "daily_latency", sa.Column("day", sa.Date(), nullable=False),
        *_strings("stage", "mode", "ab_arm"),
        sa.Column("bucket", sa.SmallInteger(), nullable=False),
        sa.Column("questions", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("day", "stage", "mode", "ab_arm", "bucket",
                                name=op.f("pk_daily_latency")))
    op.create_table(
        "question_vectors", sa.Column("interaction_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["interaction_id"], ["interactions.id"], ondelete="CASCADE",
                                name=op.f("fk_question_vectors_interaction_id_interactions")),
        sa.PrimaryKeyConstraint("interaction_id", name=op.f("pk_question_vectors")))
    rebuild(op.get_bind())


def downgrade() -> None:
    for name in ("question_vectors", "daily_latency", "daily_tokens", "daily_outcomes"):
        op.drop_table(name)
