"""interactions.llm_provider: the model service that graded and wrote an answer (anthropic,
bedrock, vertex, openai), so tokens and cost can be read by provider and model.

Revision ID: 0014
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every answer recorded before this one that used a model used Anthropic's API.
    with op.batch_alter_table("interactions") as batch:
        batch.add_column(sa.Column("llm_provider", sa.String(length=16), nullable=False,
                                   server_default=""))
    op.execute("UPDATE interactions SET llm_provider = 'anthropic' WHERE models IS NOT NULL"
               " AND CAST(models AS TEXT) NOT IN ('{}', 'null')")


def downgrade() -> None:
    with op.batch_alter_table("interactions") as batch:
        batch.drop_column("llm_provider")
