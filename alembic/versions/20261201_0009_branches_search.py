"""Branches and search: messages form a tree, sessions have an active leaf, pinned and archived flags,
and a full-text index of what the owner can see, kept by triggers on both engines.

- ``messages.parent_id`` (the message a message follows) and ``sessions.active_leaf_id`` (the end of the
  line being shown); ``superseded_at`` keeps meaning "off the active line".
- Existing rows become branches: each session's messages are replayed in the order they were written,
  and every group of rows superseded together (one edit or regeneration: they share their
  ``superseded_at``) leaves the line just before the first row written after it. A row's parent is the
  line's last message when it was written; the live rows stay the active line, its last one the leaf.
- ``sessions.pinned``, ``sessions.archived_at``; the sessions list's index now leads with ``pinned``.
- Search: ``search_documents`` holds one row per live message of a live session (its text, attachment
  and tool names) and one per session title. Triggers on ``messages`` and ``sessions`` keep it current
  on every insert, update of text, supersede or restore, soft delete and delete. On SQLite an FTS5
  table indexes it (external content, kept by triggers on ``search_documents``); on PostgreSQL a
  generated ``tsvector`` column with a GIN index does. Both index the owner as one token, so a query
  only walks the caller's documents. None of this is in the ORM models (``alembic/env.py`` leaves the
  ``search_*`` tables out of autogenerate): the repository queries it with engine-specific SQL.

SQLite drops a table's triggers when a batch migration recreates the table: a later migration that
recreates ``messages`` or ``sessions`` there must create the triggers below again
(``tests/persistence/test_migrations.py`` checks they exist at head).

Revision ID: 0009_branches_search
Revises: 0008_mcp_servers
Create Date: 2026-12-01 09:00:00
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0009_branches_search"
down_revision: str | None = "0008_mcp_servers"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_GUID = advanced_alchemy.types.guid.GUID(length=16)
_STAMP = advanced_alchemy.types.datetime.DateTimeUTC(timezone=True)
_UPDATE_BATCH = 1000

# ---------------------------------------------------------------------------------------------------
# SQLite: the document text of a message row ``{m}``: its text, then every part's ``name`` (attachments,
# tool calls), then the tool a tool message answers.
_SQLITE_BODY = """trim({m}.content || ' ' || coalesce((
        SELECT group_concat(json_extract(p.value, '$.name'), ' ')
        FROM json_each(coalesce({m}.parts, '[]')) AS p WHERE json_type(p.value, '$.name') = 'text'
    ), '') || ' ' || coalesce(
        json_extract({m}.metadata, '$.tool_agent_output.toolName'),
        json_extract({m}.metadata, '$.frontend_tool_result.toolName'), ''))"""
_SQLITE_OWNER = "'o' || lower(hex({s}.owner_id))"
_SQLITE_MESSAGE_DOC = f"""INSERT INTO search_documents (session_id, message_id, owner_id, owner_token, body)
    SELECT s.id, m.id, s.owner_id, {_SQLITE_OWNER.format(s="s")}, {_SQLITE_BODY.format(m="m")}
    FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
    WHERE m.superseded_at IS NULL AND s.deleted_at IS NULL"""
_SQLITE_TITLE_DOC = f"""INSERT INTO search_documents (session_id, message_id, owner_id, owner_token, body)
    SELECT s.id, NULL, s.owner_id, {_SQLITE_OWNER.format(s="s")}, s.title
    FROM sessions AS s WHERE s.title IS NOT NULL AND s.deleted_at IS NULL"""
_SQLITE_TRIGGERS = {
    # The FTS5 index follows its content table.
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
    # Documents follow messages and sessions.
    "messages_search_ai": f"""AFTER INSERT ON messages WHEN new.superseded_at IS NULL BEGIN
        {_SQLITE_MESSAGE_DOC} AND m.id = new.id;
    END""",
    "messages_search_au": f"""AFTER UPDATE OF content, parts, metadata, superseded_at ON messages BEGIN
        DELETE FROM search_documents WHERE message_id = old.id;
        {_SQLITE_MESSAGE_DOC} AND m.id = new.id;
    END""",
    "messages_search_ad": """AFTER DELETE ON messages BEGIN
        DELETE FROM search_documents WHERE message_id = old.id;
    END""",
    "sessions_search_ai": f"""AFTER INSERT ON sessions BEGIN
        {_SQLITE_TITLE_DOC} AND s.id = new.id;
    END""",
    "sessions_search_au_title": f"""AFTER UPDATE OF title ON sessions BEGIN
        DELETE FROM search_documents WHERE session_id = old.id AND message_id IS NULL;
        {_SQLITE_TITLE_DOC} AND s.id = new.id;
    END""",
    "sessions_search_au_deleted": f"""AFTER UPDATE OF deleted_at ON sessions BEGIN
        DELETE FROM search_documents WHERE session_id = old.id;
        {_SQLITE_TITLE_DOC} AND s.id = new.id;
        {_SQLITE_MESSAGE_DOC} AND s.id = new.id;
    END""",
    "sessions_search_ad": """AFTER DELETE ON sessions BEGIN
        DELETE FROM search_documents WHERE session_id = old.id;
    END""",
}

# ---------------------------------------------------------------------------------------------------
# PostgreSQL: the same document text as a function; ``document`` indexes it with punctuation as spaces
# (the parser would otherwise keep ``sunset.jpg`` as one host-like token) and the owner as one lexeme.
_PG_FUNCTIONS = [
    """CREATE FUNCTION iris_search_body(content text, parts jsonb, meta jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
        SELECT concat_ws(' ', content,
            (SELECT string_agg(p ->> 'name', ' ')
             FROM jsonb_array_elements(CASE WHEN jsonb_typeof(parts) = 'array' THEN parts ELSE '[]' END) AS p
             WHERE jsonb_typeof(p -> 'name') = 'string'),
            coalesce(meta #>> '{tool_agent_output,toolName}', meta #>> '{frontend_tool_result,toolName}'))
    $$""",
    """CREATE FUNCTION iris_search_message() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            DELETE FROM search_documents WHERE message_id = OLD.id;
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.superseded_at IS NULL THEN
            INSERT INTO search_documents (session_id, message_id, owner_id, body)
            SELECT s.id, NEW.id, s.owner_id, iris_search_body(NEW.content, NEW.parts, NEW.metadata)
            FROM sessions AS s WHERE s.id = NEW.session_id AND s.deleted_at IS NULL;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION iris_search_session() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE' AND NEW.deleted_at IS DISTINCT FROM OLD.deleted_at THEN
            DELETE FROM search_documents WHERE session_id = NEW.id;
            INSERT INTO search_documents (session_id, message_id, owner_id, body)
            SELECT NEW.id, m.id, NEW.owner_id, iris_search_body(m.content, m.parts, m.metadata)
            FROM messages AS m
            WHERE m.session_id = NEW.id AND m.superseded_at IS NULL AND NEW.deleted_at IS NULL;
        ELSIF TG_OP = 'UPDATE' THEN
            DELETE FROM search_documents WHERE session_id = NEW.id AND message_id IS NULL;
        END IF;
        IF NEW.title IS NOT NULL AND NEW.deleted_at IS NULL THEN
            INSERT INTO search_documents (session_id, message_id, owner_id, body)
            VALUES (NEW.id, NULL, NEW.owner_id, NEW.title);
        END IF;
        RETURN NULL;
    END $$""",
]
_PG_DOCUMENT = (
    "to_tsvector('simple'::regconfig, regexp_replace(body, '[[:punct:]]+', ' ', 'g'))"
    " || ('o' || md5(owner_id))::tsvector"
)
_PG_TRIGGERS = [
    """CREATE TRIGGER messages_search AFTER INSERT OR DELETE OR UPDATE OF content, parts, metadata, superseded_at
    ON messages FOR EACH ROW EXECUTE FUNCTION iris_search_message()""",
    """CREATE TRIGGER sessions_search AFTER INSERT OR UPDATE OF title, deleted_at
    ON sessions FOR EACH ROW EXECUTE FUNCTION iris_search_session()""",
]


def upgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("parent_id", _GUID, nullable=True))
        batch.create_foreign_key(
            op.f("fk_messages_parent_id_messages"), "messages", ["parent_id"], ["id"], ondelete="CASCADE"
        )
        batch.create_index("ix_messages_parent_id", ["parent_id"], unique=False)
    # Plain ADD COLUMNs, never a batch copy of ``sessions``: on SQLite (foreign keys on) dropping the old
    # copy would delete, by cascade, every run and message that references it.
    op.add_column("sessions", sa.Column("active_leaf_id", _GUID, nullable=True))
    op.add_column("sessions", sa.Column("pinned", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column("sessions", sa.Column("archived_at", _STAMP, nullable=True))
    op.drop_index("ix_sessions_owner_agent_activity", table_name="sessions")
    op.create_index(
        "ix_sessions_owner_agent_list", "sessions", ["owner_id", "agent_id", "pinned", "last_activity_at"]
    )
    _superseded_rows_into_branches()
    _create_search()


def downgrade() -> None:
    _drop_search()
    op.drop_index("ix_sessions_owner_agent_list", table_name="sessions")
    op.create_index("ix_sessions_owner_agent_activity", "sessions", ["owner_id", "agent_id", "last_activity_at"])
    for column in ("archived_at", "pinned", "active_leaf_id"):
        op.drop_column("sessions", column)  # SQLite ≥ 3.35 drops a plain column in place
    with op.batch_alter_table("messages") as batch:
        batch.drop_index("ix_messages_parent_id")
        batch.drop_constraint(op.f("fk_messages_parent_id_messages"), type_="foreignkey")
        batch.drop_column("parent_id")


# ---------------------------------------------------------------------------------------------------
# Data: superseded rows into branches.


def replay(rows: Sequence[tuple[UUID, dt.datetime, dt.datetime | None]]) -> tuple[dict[UUID, UUID | None], UUID | None]:
    """Parents and the active leaf of one session's rows ``(id, created_at, superseded_at)``, given in
    the order they were written.

    The old edit and regenerate marked the tail of the live line superseded (all with one timestamp),
    then wrote the new rows after it. So each group is taken off the line before the first row written
    after the group was superseded (once all of its rows exist), and a row's parent is the line's last
    message when it was written. What is left of the line at the end is the live rows: the active line.
    """
    groups: dict[dt.datetime, set[UUID]] = {}
    for pk, _, superseded in rows:
        if superseded is not None:
            groups.setdefault(superseded, set()).add(pk)
    pending = sorted(groups)
    line: list[UUID] = []
    written: set[UUID] = set()
    parents: dict[UUID, UUID | None] = {}

    def leave(stamp: dt.datetime) -> None:
        gone = groups[stamp]
        line[:] = [pk for pk in line if pk not in gone]

    for pk, created, _ in rows:
        while pending and pending[0] <= created and groups[pending[0]] <= written:
            leave(pending.pop(0))
        parents[pk] = line[-1] if line else None
        line.append(pk)
        written.add(pk)
    for stamp in pending:
        leave(stamp)
    return parents, (line[-1] if line else None)


def _superseded_rows_into_branches() -> None:
    bind = op.get_bind()
    messages = sa.table(
        "messages",
        sa.column("id", _GUID),
        sa.column("session_id", _GUID),
        sa.column("position", sa.Integer),
        sa.column("created_at", _STAMP),
        sa.column("superseded_at", _STAMP),
        sa.column("parent_id", _GUID),
    )
    sessions = sa.table("sessions", sa.column("id", _GUID), sa.column("active_leaf_id", _GUID))
    set_parent = (
        sa.update(messages)
        .where(messages.c.id == sa.bindparam("row_id"))
        .values(parent_id=sa.bindparam("row_parent"))
    )
    set_leaf = (
        sa.update(sessions)
        .where(sessions.c.id == sa.bindparam("row_id"))
        .values(active_leaf_id=sa.bindparam("row_leaf"))
    )
    ordered = sa.select(
        messages.c.session_id, messages.c.id, messages.c.created_at, messages.c.superseded_at
    ).order_by(messages.c.session_id, messages.c.position)
    parent_rows: list[dict[str, Any]] = []
    leaf_rows: list[dict[str, Any]] = []
    for session_id, rows in _by_session(bind.execute(ordered)):
        parents, leaf = replay(rows)
        parent_rows += [{"row_id": pk, "row_parent": parent} for pk, parent in parents.items() if parent]
        leaf_rows.append({"row_id": session_id, "row_leaf": leaf})
        if len(parent_rows) >= _UPDATE_BATCH:
            bind.execute(set_parent, parent_rows)
            parent_rows = []
    for statement, values in ((set_parent, parent_rows), (set_leaf, leaf_rows)):
        for start in range(0, len(values), _UPDATE_BATCH):
            bind.execute(statement, values[start : start + _UPDATE_BATCH])


def _by_session(
    result: Iterable[Any],
) -> Iterable[tuple[UUID, list[tuple[UUID, dt.datetime, dt.datetime | None]]]]:
    current: UUID | None = None
    rows: list[tuple[UUID, dt.datetime, dt.datetime | None]] = []
    for session_id, pk, created, superseded in result:
        if session_id != current and rows:
            assert current is not None
            yield current, rows
            rows = []
        current = session_id
        rows.append((pk, created, superseded))
    if rows and current is not None:
        yield current, rows


# ---------------------------------------------------------------------------------------------------
# Search.


def _create_search() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    # On SQLite an INTEGER PRIMARY KEY is the rowid, which the FTS5 index points at (and VACUUM keeps).
    key = sa.Column("id", sa.Integer(), primary_key=True) if sqlite else sa.Column(
        "id", sa.BigInteger(), sa.Identity(), primary_key=True
    )
    op.create_table(
        "search_documents",
        key,
        sa.Column("session_id", _GUID, sa.ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("message_id", _GUID, sa.ForeignKey("messages.id", ondelete="CASCADE"), nullable=True),
        sa.Column("owner_id", sa.String(length=128), nullable=False),
        *([sa.Column("owner_token", sa.Text(), nullable=False)] if sqlite else []),
        sa.Column("body", sa.Text(), nullable=False),
    )
    op.create_index("ix_search_documents_session_id", "search_documents", ["session_id"])
    op.create_index("uq_search_documents_message_id", "search_documents", ["message_id"], unique=True)
    if sqlite:
        op.execute(
            "CREATE VIRTUAL TABLE search_index USING fts5(owner_token, body, content='search_documents', "
            "content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='2 3')"
        )
        for name, body in _SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body}")
        op.execute(_SQLITE_TITLE_DOC)
        op.execute(_SQLITE_MESSAGE_DOC)
        return
    op.execute(f"ALTER TABLE search_documents ADD COLUMN document tsvector GENERATED ALWAYS AS ({_PG_DOCUMENT}) STORED")
    op.execute("CREATE INDEX ix_search_documents_document ON search_documents USING gin (document)")
    for statement in (*_PG_FUNCTIONS, *_PG_TRIGGERS):
        op.execute(statement)
    op.execute(
        """INSERT INTO search_documents (session_id, message_id, owner_id, body)
        SELECT s.id, NULL, s.owner_id, s.title FROM sessions AS s
        WHERE s.title IS NOT NULL AND s.deleted_at IS NULL"""
    )
    op.execute(
        """INSERT INTO search_documents (session_id, message_id, owner_id, body)
        SELECT s.id, m.id, s.owner_id, iris_search_body(m.content, m.parts, m.metadata)
        FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
        WHERE m.superseded_at IS NULL AND s.deleted_at IS NULL"""
    )


def _drop_search() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS search_index")
    else:
        op.execute("DROP TRIGGER IF EXISTS messages_search ON messages")
        op.execute("DROP TRIGGER IF EXISTS sessions_search ON sessions")
        for function in ("iris_search_message()", "iris_search_session()", "iris_search_body(text, jsonb, jsonb)"):
            op.execute(f"DROP FUNCTION IF EXISTS {function}")
    op.drop_table("search_documents")
