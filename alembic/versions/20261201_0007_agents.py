"""Agents as data: description, the models an agent offers, tool limits, reasoning defaults, enabled and
file-managed flags, and immutable versions that runs point at.

``system_prompt`` becomes ``instructions`` and ``enabled_tools`` becomes ``tools`` (the API's names).
Each existing agent offers what its model picker offered until now (the enabled guest-visible models,
then its default model when it was not among them) and gets version 1, a snapshot of itself. Runs from
before keep no agent version (``agent_version_id`` stays NULL): which version they ran with was never
recorded.

Revision ID: 0007_agents
Revises: 0006_one_running_run
Create Date: 2026-12-01 09:00:00
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import advanced_alchemy.types
import sqlalchemy as sa
from uuid_utils.compat import uuid7

from alembic import op

revision: str = "0007_agents"
down_revision: str | None = "0006_one_running_run"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_GUID = advanced_alchemy.types.guid.GUID(length=16)
_JSON = advanced_alchemy.types.JsonB
_STAMP = advanced_alchemy.types.datetime.DateTimeUTC(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.alter_column("system_prompt", new_column_name="instructions", existing_type=sa.Text())
        batch.alter_column("enabled_tools", new_column_name="tools", existing_type=_JSON)
        batch.add_column(sa.Column("description", sa.Text(), nullable=True))
        batch.add_column(sa.Column("model_ids", _JSON, nullable=True))
        batch.add_column(sa.Column("max_tool_iterations", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("reasoning", _JSON, nullable=True))
        batch.add_column(sa.Column("enabled", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch.add_column(sa.Column("from_file", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default=sa.text("1")))
    op.create_table(
        "agent_versions",
        sa.Column("id", _GUID, nullable=False),
        sa.Column("agent_id", _GUID, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("snapshot", _JSON, nullable=False),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column("created_at", _STAMP, nullable=False),
        sa.Column("updated_at", _STAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_agent_versions_agent_id_agents"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_versions")),
        sa.UniqueConstraint("agent_id", "version", name="uq_agent_versions_agent_id_version"),
    )
    _first_versions()
    with op.batch_alter_table("agents") as batch:
        batch.alter_column("description", existing_type=sa.Text(), nullable=False)
        batch.alter_column("model_ids", existing_type=_JSON, nullable=False)
        batch.alter_column("reasoning", existing_type=_JSON, nullable=False)
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("agent_version_id", _GUID, nullable=True))
        batch.create_foreign_key(
            op.f("fk_runs_agent_version_id_agent_versions"),
            "agent_versions",
            ["agent_version_id"],
            ["id"],
            ondelete="SET NULL",
        )


def _first_versions() -> None:
    """Fill the new columns and record version 1 of every agent, through the real column types (GUIDs
    are binary on SQLite and ``uuid`` on PostgreSQL)."""
    bind = op.get_bind()
    models = sa.table(
        "models",
        sa.column("id", _GUID),
        *(sa.column(c) for c in ("provider", "model_id", "name")),
        *(sa.column(c, sa.Boolean) for c in ("enabled", "guest_visible")),
    )
    agents = sa.table(
        "agents",
        sa.column("id", _GUID),
        sa.column("default_model_id", _GUID),
        *(sa.column(c) for c in ("slug", "name", "instructions", "description")),
        sa.column("guest_access", sa.Boolean),
        *(sa.column(c, _JSON) for c in ("tools", "model_ids", "reasoning")),
    )
    versions = sa.table(
        "agent_versions",
        *(sa.column(c, _GUID) for c in ("id", "agent_id")),
        sa.column("version", sa.Integer),
        sa.column("snapshot", _JSON),
        *(sa.column(c, _STAMP) for c in ("created_at", "updated_at")),
    )
    refs = {pk: f"{provider}/{model_id}" for pk, provider, model_id, _ in bind.execute(_models_query(models))}
    picker = [
        pk
        for pk, _, _, visible in bind.execute(_models_query(models).where(models.c.enabled.is_(True)))
        if visible
    ]
    now = dt.datetime.now(dt.UTC)
    for row in bind.execute(sa.select(agents)).mappings().all():
        offered = [
            *picker,
            *([row["default_model_id"]] if row["default_model_id"] not in (None, *picker) else []),
        ]
        bind.execute(
            sa.update(agents)
            .where(agents.c.id == row["id"])
            .values(description="", model_ids=[str(pk) for pk in offered], reasoning={})
        )
        snapshot: dict[str, Any] = {
            "slug": row["slug"],
            "name": row["name"],
            "description": "",
            "instructions": row["instructions"],
            "defaultModel": _pin(row["default_model_id"], refs),
            "models": [_pin(pk, refs) for pk in offered],
            "tools": list(row["tools"] or []),
            "maxToolIterations": None,
            "guestAccess": bool(row["guest_access"]),
            "reasoning": {},
            "enabled": True,
        }
        bind.execute(
            sa.insert(versions).values(
                id=uuid7(), agent_id=row["id"], version=1, snapshot=snapshot, created_at=now, updated_at=now
            )
        )


def _models_query(models: Any) -> Any:
    return sa.select(models.c.id, models.c.provider, models.c.model_id, models.c.guest_visible).order_by(
        models.c.provider, models.c.name
    )


def _pin(pk: Any, refs: dict[Any, str]) -> dict[str, str] | None:
    return None if pk is None else {"id": str(pk), "ref": refs[pk]}


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_constraint(op.f("fk_runs_agent_version_id_agent_versions"), type_="foreignkey")
        batch.drop_column("agent_version_id")
    op.drop_table("agent_versions")
    with op.batch_alter_table("agents") as batch:
        for column in (
            "version",
            "from_file",
            "enabled",
            "reasoning",
            "max_tool_iterations",
            "model_ids",
            "description",
        ):
            batch.drop_column(column)
        batch.alter_column("tools", new_column_name="enabled_tools", existing_type=_JSON)
        batch.alter_column("instructions", new_column_name="system_prompt", existing_type=sa.Text())
