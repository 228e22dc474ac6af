"""Document and audio uploads: what Iris learned about the file, on its upload row.

- ``uploads.pages``: a PDF's page count; ``uploads.duration_seconds``: an audio file's length.
- ``uploads.thumbnail_path``: the stored first-page PNG of a PDF; ``uploads.text_path``: the stored JSON
  array of its page texts (read by the fallback for models without native PDF). Both live under
  ``derived/documents/{sha256}/``, outside ``agent-inputs/``, so no inbound URL can name them.

All nullable (images and older rows have none); plain ``ADD COLUMN`` on both engines, so SQLite keeps the
table and its indexes as they are.

Revision ID: 0012_document_uploads
Revises: 0011_search_speed
Create Date: 2026-12-02 05:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0012_document_uploads"
down_revision: str | None = "0011_search_speed"
branch_labels = None
depends_on = None

_COLUMNS = ("pages", "duration_seconds", "thumbnail_path", "text_path")


def upgrade() -> None:
    op.add_column("uploads", sa.Column("pages", sa.Integer(), nullable=True))
    op.add_column("uploads", sa.Column("duration_seconds", sa.Float(), nullable=True))
    op.add_column("uploads", sa.Column("thumbnail_path", sa.String(length=500), nullable=True))
    op.add_column("uploads", sa.Column("text_path", sa.String(length=500), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("uploads") as batch:
        for column in reversed(_COLUMNS):
            batch.drop_column(column)
