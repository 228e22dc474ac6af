"""One running run per thread, enforced by the database: a partial unique index on ``runs.session_id``
where ``status = 'running'`` (both engines support partial indexes).

The run manager refuses a second run on a thread it is running itself; this covers two processes,
where the second run's intake commit now fails (``RUN_ERROR run_not_stored``) instead of both running.

Revision ID: 0006_one_running_run
Revises: 0005_faults_quotas
Create Date: 2026-11-30 15:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_one_running_run"
down_revision: str | None = "0005_faults_quotas"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RUNNING = sa.text("status = 'running'")


def upgrade() -> None:
    # A database from before could hold two running runs of one thread (the race this closes): all but
    # the newest are failed, as the crash sweep would have done.
    op.execute(
        """
        UPDATE runs SET status = 'failed', error_code = 'run_lost'
        WHERE status = 'running' AND EXISTS (
            SELECT 1 FROM runs AS newer
            WHERE newer.session_id = runs.session_id AND newer.status = 'running'
              AND newer.started_at > runs.started_at
        )
        """
    )
    with op.batch_alter_table("runs") as batch:
        batch.create_index(
            "uq_runs_one_running_per_session",
            ["session_id"],
            unique=True,
            sqlite_where=RUNNING,
            postgresql_where=RUNNING,
        )


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("uq_runs_one_running_per_session")
