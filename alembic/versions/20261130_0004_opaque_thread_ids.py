"""Opaque thread ids: ``sessions.thread_id`` (the client's ``threadId``, unique per owner) beside the
UUID primary key, and ``uploads.thread_id`` as a string.

Existing threads keep their id: a session's ``thread_id`` is its UUID in canonical lower-case form, the
form every stored upload path already uses.

Revision ID: 0004_contract
Revises: 0003_operator
Create Date: 2026-11-30 11:40:00
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0004_contract"
down_revision: str | None = "0003_operator"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_GUID = advanced_alchemy.types.guid.GUID(length=16)


def _copy(table: str, source: tuple[str, sa.types.TypeEngine[Any]], target: tuple[str, sa.types.TypeEngine[Any]],
          convert: Callable[[Any], Any]) -> None:
    """``target = convert(source)`` row by row, through the real column types (the GUID type stores
    binary on SQLite and ``uuid`` on PostgreSQL, so only SQLAlchemy can read it on both)."""
    bind = op.get_bind()
    columns = {"id": _GUID, source[0]: source[1], target[0]: target[1]}
    rows = sa.table(table, *(sa.column(name, type_) for name, type_ in columns.items()))
    for pk, value in bind.execute(sa.select(rows.c.id, rows.c[source[0]])).all():
        bind.execute(sa.update(rows).where(rows.c.id == pk).values({target[0]: convert(value)}))


def _copy_ids_as_text(table: str, source: str, target: str) -> None:
    _copy(table, (source, _GUID), (target, sa.String(128)), str)


def _copy_text_as_ids(table: str, source: str, target: str) -> None:
    _copy(table, (source, sa.String(128)), (target, _GUID), uuid.UUID)


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("thread_id", sa.String(length=128), nullable=True))
    _copy_ids_as_text("sessions", "id", "thread_id")
    with op.batch_alter_table("sessions") as batch:
        batch.alter_column("thread_id", existing_type=sa.String(length=128), nullable=False)
        batch.create_unique_constraint("uq_sessions_owner_id_thread_id", ["owner_id", "thread_id"])

    with op.batch_alter_table("uploads") as batch:
        batch.add_column(sa.Column("thread_ref", sa.String(length=128), nullable=True))
    _copy_ids_as_text("uploads", "thread_id", "thread_ref")
    with op.batch_alter_table("uploads") as batch:
        batch.drop_index("ix_uploads_owner_thread")
        batch.drop_column("thread_id")
    with op.batch_alter_table("uploads") as batch:
        batch.alter_column(
            "thread_ref", new_column_name="thread_id", existing_type=sa.String(length=128), nullable=False
        )
    with op.batch_alter_table("uploads") as batch:
        batch.create_index("ix_uploads_owner_thread", ["owner_id", "thread_id"], unique=False)


def downgrade() -> None:
    """Back to UUID thread ids: only while every session's thread id is its own UUID and every upload's
    is a UUID (as right after the upgrade); otherwise it refuses before changing anything."""
    bind = op.get_bind()
    sessions = sa.table("sessions", sa.column("id", _GUID), sa.column("thread_id", sa.String(128)))
    for pk, thread_id in bind.execute(sa.select(sessions.c.id, sessions.c.thread_id)).all():
        if str(pk) != thread_id:
            raise RuntimeError(f"thread {thread_id!r} is not its session's UUID; cannot downgrade")
    with op.batch_alter_table("uploads") as batch:
        batch.add_column(sa.Column("thread_uuid", _GUID, nullable=True))
    _copy_text_as_ids("uploads", "thread_id", "thread_uuid")
    with op.batch_alter_table("uploads") as batch:
        batch.drop_index("ix_uploads_owner_thread")
        batch.drop_column("thread_id")
    with op.batch_alter_table("uploads") as batch:
        batch.alter_column("thread_uuid", new_column_name="thread_id", nullable=False)
    with op.batch_alter_table("uploads") as batch:
        batch.create_index("ix_uploads_owner_thread", ["owner_id", "thread_id"], unique=False)

    with op.batch_alter_table("sessions") as batch:
        batch.drop_constraint("uq_sessions_owner_id_thread_id", type_="unique")
        batch.drop_column("thread_id")
