"""document_votes: each current vote once per document its answer cited, kept with the vote,
so the learned prior reads a document's votes without every answer that cited it (filled
here from the stored votes).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "document_votes", sa.Column("doc_id", sa.String(), nullable=False),
        sa.Column("interaction_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("vote", sa.SmallInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["interaction_id"], ["interactions.id"], ondelete="CASCADE",
                                name=op.f("fk_document_votes_interaction_id_interactions")),
        sa.PrimaryKeyConstraint("doc_id", "interaction_id", "user_id",
                                name=op.f("pk_document_votes")))
    op.execute(
        "INSERT INTO document_votes (doc_id, interaction_id, user_id, vote, updated_at) "
        "SELECT DISTINCT s.doc_id, f.interaction_id, f.user_id, f.vote, f.updated_at "
        "FROM feedback f JOIN interaction_sources s ON s.interaction_id = f.interaction_id "
        "WHERE s.cited")


def downgrade() -> None:
    op.drop_table("document_votes")
