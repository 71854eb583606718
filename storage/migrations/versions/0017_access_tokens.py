"""access_tokens: personal access tokens for the HTTP API and the MCP endpoint (the SHA-256 of
each secret, the email it acts as, its expiry and revocation).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "access_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("hint", sa.String(32), nullable=False),
        sa.Column("email", sa.String(), nullable=False),
        sa.Column("label", sa.String(), nullable=False),
        sa.Column("created_by", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_access_tokens")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_access_tokens_secret_hash")),
    )
    op.create_index(op.f("ix_access_tokens_email"), "access_tokens", ["email"])


def downgrade() -> None:
    op.drop_index(op.f("ix_access_tokens_email"), table_name="access_tokens")
    op.drop_table("access_tokens")
