"""document_stats.model_graded / model_grade_sum: the grades a model gave (or a cache of one),
apart from the fast mode's heuristic ones, which are low by construction and must not put a
document on the console's "retrieved often, graded low" list.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("document_stats") as batch:
        batch.add_column(sa.Column("model_graded", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("model_grade_sum", sa.Float(), nullable=False,
                                   server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("document_stats") as batch:
        batch.drop_column("model_grade_sum")
        batch.drop_column("model_graded")
