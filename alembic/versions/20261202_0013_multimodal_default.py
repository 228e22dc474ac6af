"""The offline ``local/multimodal`` model (it reads PDFs and audio) joins the catalogue, and the default
agent offers it in a new version.

Agents are versioned data (0007): an existing install's default agent (slug ``default``, not managed by
the agents file, which rewrites its own) gets version N+1, a copy of version N's snapshot that also
offers the model; version N stays what earlier runs used. A fresh database has no agent yet: the seed
(``app/catalogue/defaults.py``) creates the default agent with the model from the start. A model row
named ``local/multimodal`` that already exists (from the models file, say) is offered as it is.

Revision ID: 0013_multimodal_default
Revises: 0012_document_uploads (chained after issue 22's upload migration, which this branch merged;
it needs nothing from it and would run on 0009_branches_search as well)
Create Date: 2026-12-02 05:00:00
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import advanced_alchemy.types
import sqlalchemy as sa
from uuid_utils.compat import uuid7

from alembic import op

revision: str = "0013_multimodal_default"
down_revision: str | None = "0012_document_uploads"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_GUID = advanced_alchemy.types.guid.GUID(length=16)
_JSON = advanced_alchemy.types.JsonB
_STAMP = advanced_alchemy.types.datetime.DateTimeUTC(timezone=True)

PROVIDER, MODEL_ID = "local", "multimodal"
NAME = "Local multimodal (offline test model)"


def _tables() -> tuple[sa.TableClause, sa.TableClause, sa.TableClause]:
    def stamps() -> tuple[sa.ColumnClause[Any], ...]:
        return sa.column("created_at", _STAMP), sa.column("updated_at", _STAMP)

    models = sa.table(
        "models",
        sa.column("id", _GUID),
        *(sa.column(c) for c in ("name", "provider", "model_id", "type")),
        *(sa.column(c, sa.Boolean) for c in ("supports_tools", "enabled", "guest_visible", "from_file")),
        sa.column("options", _JSON),
        *stamps(),
    )
    agents = sa.table(
        "agents",
        sa.column("id", _GUID),
        sa.column("default_model_id", _GUID),
        sa.column("slug"),
        sa.column("from_file", sa.Boolean),
        sa.column("model_ids", _JSON),
        sa.column("version", sa.Integer),
        *stamps(),
    )
    versions = sa.table(
        "agent_versions",
        *(sa.column(c, _GUID) for c in ("id", "agent_id")),
        sa.column("version", sa.Integer),
        sa.column("snapshot", _JSON),
        *stamps(),
    )
    return models, agents, versions


def upgrade() -> None:
    bind = op.get_bind()
    models, agents, versions = _tables()
    agent = bind.execute(sa.select(agents).where(agents.c.slug == "default")).mappings().one_or_none()
    if agent is None or agent["from_file"]:
        return
    now = dt.datetime.now(dt.UTC)
    model_pk = bind.scalar(
        sa.select(models.c.id).where(models.c.provider == PROVIDER, models.c.model_id == MODEL_ID)
    )
    if model_pk is None:
        model_pk = uuid7()
        bind.execute(
            sa.insert(models).values(
                id=model_pk,
                name=NAME,
                provider=PROVIDER,
                model_id=MODEL_ID,
                type="multimodal",
                supports_tools=True,
                enabled=True,
                guest_visible=True,
                from_file=False,
                options={},
                created_at=now,
                updated_at=now,
            )
        )
    offered = list(agent["model_ids"] or [])
    if str(model_pk) in offered:
        return
    latest = bind.execute(
        sa.select(versions.c.snapshot).where(
            versions.c.agent_id == agent["id"], versions.c.version == agent["version"]
        )
    ).scalar_one_or_none()
    if latest is None:  # pragma: no cover - 0007 gave every agent its first version
        return
    snapshot: dict[str, Any] = dict(latest)
    snapshot["models"] = [*snapshot.get("models", []), {"id": str(model_pk), "ref": f"{PROVIDER}/{MODEL_ID}"}]
    version = int(agent["version"]) + 1
    bind.execute(
        sa.update(agents)
        .where(agents.c.id == agent["id"])
        .values(model_ids=[*offered, str(model_pk)], version=version, updated_at=now)
    )
    bind.execute(
        sa.insert(versions).values(
            id=uuid7(),
            agent_id=agent["id"],
            version=version,
            snapshot=snapshot,
            created_at=now,
            updated_at=now,
        )
    )


def downgrade() -> None:
    """The default agent stops offering the model (its newest version goes, when this migration made
    it), and the model row goes unless an agent defaults to it."""
    bind = op.get_bind()
    models, agents, versions = _tables()
    model_pk = bind.scalar(
        sa.select(models.c.id).where(models.c.provider == PROVIDER, models.c.model_id == MODEL_ID)
    )
    if model_pk is None:
        return
    agent = bind.execute(sa.select(agents).where(agents.c.slug == "default")).mappings().one_or_none()
    if agent is not None and str(model_pk) in (agent["model_ids"] or []):
        newest = bind.execute(
            sa.select(versions.c.id, versions.c.snapshot).where(
                versions.c.agent_id == agent["id"], versions.c.version == agent["version"]
            )
        ).one_or_none()
        previous_offered = bind.execute(
            sa.select(versions.c.snapshot).where(
                versions.c.agent_id == agent["id"], versions.c.version == int(agent["version"]) - 1
            )
        ).scalar_one_or_none()
        values: dict[str, Any] = {"model_ids": [m for m in agent["model_ids"] if m != str(model_pk)]}
        if newest is not None and previous_offered is not None and not _offers(previous_offered, model_pk):
            bind.execute(sa.delete(versions).where(versions.c.id == newest.id))
            values["version"] = int(agent["version"]) - 1
        bind.execute(sa.update(agents).where(agents.c.id == agent["id"]).values(**values))
    if bind.scalar(sa.select(sa.func.count()).where(agents.c.default_model_id == model_pk)) == 0:
        bind.execute(sa.delete(models).where(models.c.id == model_pk))


def _offers(snapshot: dict[str, Any], model_pk: Any) -> bool:
    return any(pin.get("id") == str(model_pk) for pin in snapshot.get("models", []))
