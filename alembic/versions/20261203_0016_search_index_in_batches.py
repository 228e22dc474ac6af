"""On SQLite the full-text index takes new search documents in batches, not inside the writes that make them.

Each run writes two messages, and each message's document went into the FTS5 index inside the run's own
transaction: FTS5 writes a new segment per transaction and merges as it goes, which was a measurable
part of a run's writes and CPU (ADR 0045). Now a new document's id only goes
into ``search_pending``, and ``SearchRepository.index_pending`` moves pending documents into the index,
many per transaction: every second in the background and always before a search reads the index, so a
search still finds everything committed before it.

The FTS5 index is an external-content index: deleting an entry needs the values it was indexed with,
and deleting one it never had corrupts it. So the triggers that delete or update a document delete its
index entry only when the document is not pending (a pending one is not in the index yet); a deleted
document leaves ``search_pending``, and an updated one is queued again with its new text.

PostgreSQL is unchanged: its ``tsvector`` column and GIN index (with GIN's own pending list) stay.

Revision ID: 0016_search_index_in_batches
Revises: 0015_cooldown_last_code
Create Date: 2026-12-03 13:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0016_search_index_in_batches"
down_revision: str | None = "0015_cooldown_last_code"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UNLESS_PENDING = "WHERE NOT EXISTS (SELECT 1 FROM search_pending WHERE id = old.id)"
_BATCHED = {
    "search_documents_ai": """AFTER INSERT ON search_documents BEGIN
        INSERT INTO search_pending (id) VALUES (new.id);
    END""",
    "search_documents_ad": f"""AFTER DELETE ON search_documents BEGIN
        INSERT INTO search_index (search_index, rowid, owner_token, body)
        SELECT 'delete', old.id, old.owner_token, old.body {_UNLESS_PENDING};
        DELETE FROM search_pending WHERE id = old.id;
    END""",
    "search_documents_au": f"""AFTER UPDATE ON search_documents BEGIN
        INSERT INTO search_index (search_index, rowid, owner_token, body)
        SELECT 'delete', old.id, old.owner_token, old.body {_UNLESS_PENDING};
        DELETE FROM search_pending WHERE id = old.id;
        INSERT INTO search_pending (id) VALUES (new.id);
    END""",
}
_AT_ONCE = {  # 0009's
    "search_documents_ai": """AFTER INSERT ON search_documents BEGIN
        INSERT INTO search_index (rowid, owner_token, body) VALUES (new.id, new.owner_token, new.body);
    END""",
    "search_documents_ad": """AFTER DELETE ON search_documents BEGIN
        INSERT INTO search_index (search_index, rowid, owner_token, body)
        VALUES ('delete', old.id, old.owner_token, old.body);
    END""",
    "search_documents_au": """AFTER UPDATE ON search_documents BEGIN
        INSERT INTO search_index (search_index, rowid, owner_token, body)
        VALUES ('delete', old.id, old.owner_token, old.body);
        INSERT INTO search_index (rowid, owner_token, body) VALUES (new.id, new.owner_token, new.body);
    END""",
}


def _triggers(bodies: dict[str, str]) -> None:
    for name, body in bodies.items():
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute(f"CREATE TRIGGER {name} {body}")


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("CREATE TABLE search_pending (id INTEGER NOT NULL PRIMARY KEY)")
    _triggers(_BATCHED)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(
        "INSERT INTO search_index (rowid, owner_token, body) SELECT d.id, d.owner_token, d.body"
        " FROM search_pending AS p JOIN search_documents AS d ON d.id = p.id"
    )
    _triggers(_AT_ONCE)
    op.execute("DROP TABLE search_pending")
