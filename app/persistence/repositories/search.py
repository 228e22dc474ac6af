"""Full-text search over a user's conversations: one statement per engine, and SQLite's indexing step.

The index (migration 0009) holds a document per live message of a live session — its text, the names
of its attachments and tool calls, the tool a tool message answers — and one per session title, kept
current by triggers on every write. On SQLite a new document waits in ``search_pending`` until
:meth:`SearchRepository.index_pending` moves it into the FTS5 index with others (migration 0016;
``iris.app.persistence.search_indexer`` does so every second and before every search). SQLite ranks with
FTS5's ``bm25``, PostgreSQL with ``ts_rank`` over a GIN-indexed ``tsvector``. Both indexes carry the
owner as a token, so a query walks only the caller's documents, and both statements also compare
``owner_id`` itself: a hit is never another user's.

Ranking is among the owner's :data:`CANDIDATES` newest matches (documents are numbered as they are
written), which both engines find without reading every match of a common word; ranking every match
costs time in proportion to how common the words are. SQLite: FTS5's ``bm25`` counts every document of
each phrase, the owner's token included (a scan of all the owner's documents), so the candidates are
found with the owner's token and ranked in a second pass over the words alone, between the oldest and
the newest candidate — not past it, where other users' newer documents would be walked too.
PostgreSQL: the documents are keyed ``(owner_id, id)`` (migration 0010), so the newest-first walk it
takes for a common word reads only the owner's rows, and the GIN index answers rarer words; each
search is planned for its own words (:data:`_CUSTOM_PLAN`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from advanced_alchemy.types import GUID
from sqlalchemy import String, Text, text
from sqlalchemy.types import TypeEngine

from iris.app.persistence.models import ChatSession
from iris.app.persistence.search_text import fts5_match, fts5_words, postgres_owner_lexeme, tsquery

CANDIDATES = 1000
"""How many of the owner's newest matching documents a search ranks."""
INDEX_BATCH = 500
"""Pending documents one :meth:`SearchRepository.index_pending` moves into SQLite's index."""

# The best ``limit`` documents first, reading only ids and scores; then what a hit shows. (A plain
# SELECT, not a CTE: the SQLite connection takes the write lock for any statement that does not
# start with SELECT.)
_SHOWN = """
    SELECT s.thread_id, a.slug, s.title, m.id AS message_pk, m.external_id, d.body
    FROM ({ranked}) AS ranked
    JOIN search_documents AS d ON d.owner_id = :owner_id AND d.id = ranked.id
    JOIN sessions AS s ON s.id = d.session_id AND s.owner_id = :owner_id AND s.deleted_at IS NULL
    JOIN agents AS a ON a.id = s.agent_id
    LEFT JOIN messages AS m ON m.id = d.message_id
    ORDER BY ranked.score, ranked.id DESC
"""
_COLUMNS: dict[str, TypeEngine[Any]] = {
    "thread_id": String(),
    "slug": String(),
    "title": String(),
    "message_pk": GUID(length=16),  # read as the ORM reads it: 16 bytes on SQLite, uuid on PostgreSQL
    "external_id": String(),
    "body": Text(),
}
_SQLITE = text(
    _SHOWN.format(
        ranked="""
        SELECT d.id AS id, bm25(search_index, 0.0, 1.0) AS score
        FROM (
            SELECT min(newest.id) AS oldest, max(newest.id) AS latest FROM (
                SELECT rowid AS id FROM search_index WHERE search_index MATCH :match
                ORDER BY rowid DESC LIMIT :candidates
            ) AS newest
        ) AS span
        JOIN search_index ON search_index.rowid BETWEEN span.oldest AND span.latest
        JOIN search_documents AS d ON d.id = search_index.rowid
        WHERE search_index MATCH :words AND d.owner_id = :owner_id
        ORDER BY score, d.id DESC
        LIMIT :limit"""
    )
).columns(**_COLUMNS)
_POSTGRES = text(
    _SHOWN.format(
        ranked="""
        SELECT newest.id AS id, -ts_rank(newest.document, to_tsquery('simple', :query)) AS score
        FROM (
            SELECT d.id, d.document FROM search_documents AS d
            WHERE d.owner_id = :owner_id
                AND d.document @@ (to_tsquery('simple', :query) && to_tsquery('simple', :owner_lexeme))
            ORDER BY d.id DESC LIMIT :candidates
        ) AS newest
        ORDER BY score, newest.id DESC
        LIMIT :limit"""
    )
).columns(**_COLUMNS)

# SQLite's index takes new documents in batches (migration 0016). Taking the batch out of
# ``search_pending`` is the transaction's first statement, a write, so the write lock is held before the
# documents are read: nothing can change them between the read and the indexing. Their text goes in as
# parameters, so a batch carrying a long answer runs off the loop (``app.persistence.sqlite``).
_ANY_PENDING = text("SELECT EXISTS (SELECT 1 FROM search_pending)")
_TAKE_PENDING = text(
    "DELETE FROM search_pending WHERE id IN (SELECT id FROM search_pending ORDER BY id LIMIT :batch)"
    " RETURNING id"
)
_PENDING_DOCUMENTS = text(
    "SELECT id, owner_token, body FROM search_documents WHERE id IN (SELECT value FROM json_each(:ids))"
)
_INDEX = text("INSERT INTO search_index (rowid, owner_token, body) VALUES (:id, :owner_token, :body)")

_CUSTOM_PLAN = text("SET LOCAL plan_cache_mode = force_custom_plan")
"""For this transaction (the request's): plan each search for its own words. asyncpg prepares every
statement, and after five runs PostgreSQL may switch to a generic plan, which cannot know how common
the words are and walks the owner's documents for a rare one (ADR 0044)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A document that matched: a message (``message_id`` as history shows it) or a session's title."""

    thread_id: str
    agent_slug: str
    title: str | None
    message_id: str | None
    body: str


class SearchRepository(SQLAlchemyAsyncRepository[ChatSession]):
    """Searches the sessions of one owner (see the module docstring)."""

    model_type = ChatSession

    async def search(self, owner_id: str, terms: Sequence[str], *, limit: int = 20) -> list[SearchHit]:
        """The owner's documents matching every word of ``terms``
        (:func:`iris.app.persistence.search_text.words`),
        best first; nothing for no words."""
        if not terms:
            return []
        if self.session.get_bind().dialect.name == "sqlite":
            statement = _SQLITE
            params: dict[str, object] = {"match": fts5_match(owner_id, terms), "words": fts5_words(terms)}
        else:
            statement = _POSTGRES
            params = {"query": tsquery(terms), "owner_lexeme": postgres_owner_lexeme(owner_id)}
            await self.session.execute(_CUSTOM_PLAN)
        rows = await self.session.execute(
            statement, {**params, "owner_id": owner_id, "limit": limit, "candidates": CANDIDATES}
        )
        return [
            SearchHit(
                thread_id=thread_id,
                agent_slug=slug,
                title=title,
                message_id=None if pk is None else external_id or str(pk),
                body=body,
            )
            for thread_id, slug, title, pk, external_id, body in rows.all()
        ]

    async def index_pending(self) -> int:
        """Move up to :data:`INDEX_BATCH` of the documents written since into SQLite's full-text index,
        in this session's transaction; how many. PostgreSQL indexes each document as it is written: 0."""
        if self.session.get_bind().dialect.name != "sqlite":
            return 0
        if not (await self.session.execute(_ANY_PENDING)).scalar():
            return 0
        ids = (await self.session.execute(_TAKE_PENDING, {"batch": INDEX_BATCH})).scalars().all()
        if not ids:  # another transaction took them first
            return 0
        documents = await self.session.execute(_PENDING_DOCUMENTS, {"ids": json.dumps(ids)})
        rows = [{"id": pk, "owner_token": token, "body": body} for pk, token, body in documents]
        if rows:
            await self.session.execute(_INDEX, rows)
        return len(ids)
