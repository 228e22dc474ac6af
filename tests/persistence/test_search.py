"""The search repository over many documents of several owners written in turn, both engines: the
ranking order among the owner's newest matches, owner isolation when other users wrote more and later,
the PostgreSQL key that lets a search read only the owner's rows (migration 0010), and SQLite's index
taking new documents in batches (migration 0016) while edits and deletes keep it true."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import uuid
from typing import Any

import pytest
from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncSession
from uuid_utils.compat import uuid7

from iris.app.persistence.db import create_alchemy_config
from iris.app.persistence.models import ChatSession, Message
from iris.app.persistence.repositories import AgentRepository, SearchRepository
from iris.app.persistence.repositories import search as search_repository
from iris.app.persistence.search_indexer import SearchIndexer
from iris.app.settings import Settings
from tests.factories import AgentFactory

WORDS = 8
"""Every text has as many words, so a score depends on how often it says the word alone."""


def text_saying(word: str, times: int, number: int) -> str:
    filler = [f"filler{number}x{i}" for i in range(WORDS - times)]
    return " ".join([word] * times + filler)


class Writer:
    """Sessions of one message each, written through the app's tables (the triggers index them)."""

    def __init__(self, db: AsyncSession, agent_id: uuid.UUID) -> None:
        self.db = db
        self.agent_id = agent_id
        self.clock = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    async def write(self, rows: list[tuple[str, str]], *, index: bool = True) -> list[str]:
        """``(owner, text)`` in this order; the messages' ids as search answers them. ``index``: then
        moved into SQLite's index, as a search does first."""
        sessions: list[dict[str, Any]] = []
        messages: list[dict[str, Any]] = []
        for owner, body in rows:
            self.clock += dt.timedelta(seconds=1)
            session_id, message_id = uuid7(), uuid7()
            sessions.append(
                {
                    "id": session_id,
                    "owner_id": owner,
                    "thread_id": str(uuid.uuid4()),
                    "agent_id": self.agent_id,
                    "title": "untitled",
                    "last_activity_at": self.clock,
                    "active_leaf_id": message_id,
                }
            )
            messages.append(
                {
                    "id": message_id,
                    "session_id": session_id,
                    "external_id": f"m-{message_id.hex}",
                    "role": "user",
                    "content": body,
                    "position": 0,
                }
            )
        await self.db.execute(insert(ChatSession), sessions)
        await self.db.execute(insert(Message), messages)
        await self.db.commit()
        if index:
            await index_everything(self.db)
        return [m["external_id"] for m in messages]


async def index_everything(db: AsyncSession) -> None:
    """What the app's indexer does before a search: every pending document into SQLite's index."""
    repo = SearchRepository(session=db)
    while await repo.index_pending() == search_repository.INDEX_BATCH:
        await db.commit()
    await db.commit()


@pytest.fixture
async def writer(db_session: AsyncSession) -> Writer:
    agent = await AgentRepository(session=db_session).add(AgentFactory.build(slug="searched"))
    await db_session.commit()
    return Writer(db_session, agent.id)


async def test_the_best_of_the_owners_newest_matches_first_whoever_wrote_since(
    db_session: AsyncSession, writer: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alice, Bob and Carol write in turn, then Bob and Carol write many more: Alice's answer is her
    newest 30 matches (the candidates), best first — saying the word more often — and newest first
    among equals, with nothing of theirs; Bob's is his own."""
    monkeypatch.setattr(search_repository, "CANDIDATES", 30)
    owners = itertools.cycle(["alice", "bob", "carol"])
    interleaved = [(next(owners), text_saying("bilby", 1 + n % 4, n)) for n in range(150)]
    ids = await writer.write(interleaved)
    later = await writer.write(
        [("bob" if n % 2 else "carol", text_saying("bilby", 4, n)) for n in range(200)]
    )

    written = list(zip(ids, interleaved, strict=True))
    alices = [(pk, body.count("bilby")) for pk, (owner, body) in written if owner == "alice"]
    candidates = list(enumerate(alices))[-30:]  # (written order, (id, times))
    expected = [pk for _, (pk, _) in sorted(candidates, key=lambda c: (-c[1][1], -c[0]))]
    repo = SearchRepository(session=db_session)

    hits = await repo.search("alice", ["bilby"], limit=20)
    assert [hit.message_id for hit in hits] == expected[:20]
    times = sorted((t for _, (_, t) in candidates), reverse=True)
    assert [hit.body.count("bilby") for hit in hits] == times[:20]

    bobs = {hit.message_id for hit in await repo.search("bob", ["bilby"], limit=50)}
    assert len(bobs) == 30
    assert bobs <= {pk for pk, (owner, _) in written if owner == "bob"} | set(later[1::2])
    assert not bobs & {pk for pk, _ in alices}


async def test_a_rare_word_is_found_under_many_newer_matches_of_others(
    db_session: AsyncSession, writer: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner's only, oldest match is found after everyone else's, newer and more numerous than the
    candidates; and a word only others wrote finds nothing for her."""
    monkeypatch.setattr(search_repository, "CANDIDATES", 10)
    (mine,) = await writer.write([("alice", "a numbat at dawn")])
    await writer.write([(f"user{n % 7}", f"numbat dingo number {n}") for n in range(120)])
    repo = SearchRepository(session=db_session)
    assert [hit.message_id for hit in await repo.search("alice", ["numbat"])] == [mine]
    assert [hit.message_id for hit in await repo.search("alice", ["num"])] == [mine]
    assert await repo.search("alice", ["dingo"]) == []
    assert len(await repo.search("user3", ["numbat", "dingo"], limit=50)) == 10  # of its 17: the candidates


async def test_postgresql_keys_search_documents_by_owner_first(
    db_session: AsyncSession, engine_name: str
) -> None:
    """Migration 0010: the key PostgreSQL walks newest first starts with the owner, so a search never
    reads another user's rows. (On SQLite the owner's token in the FTS5 index does this.)"""
    if engine_name != "postgresql":
        pytest.skip("SQLite finds the owner's documents through the owner's token in the FTS5 index")
    key = await db_session.scalar(
        text(
            "SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM pg_index AS i"
            " CROSS JOIN unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)"
            " JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum"
            " WHERE i.indrelid = 'search_documents'::regclass AND i.indisprimary"
        )
    )
    assert key == "owner_id,id"


async def found(db: AsyncSession, owner: str, word: str) -> list[str | None]:
    return [hit.message_id for hit in await SearchRepository(session=db).search(owner, [word], limit=50)]


async def pending(db: AsyncSession) -> int:
    return int(await db.scalar(text("SELECT count(*) FROM search_pending")) or 0)


async def assert_index_matches_documents(db: AsyncSession) -> None:
    """FTS5's own check of an external-content index against its table: it raises (``database disk
    image is malformed``) when an entry was deleted with values it was not indexed with, or is missing."""
    await db.execute(text("INSERT INTO search_index (search_index, rank) VALUES ('integrity-check', 1)"))
    await db.rollback()


def sqlite_only(engine_name: str) -> None:
    if engine_name != "sqlite":
        pytest.skip("PostgreSQL's GIN index takes each document as it is written: nothing is pending")


async def test_sqlite_indexes_new_documents_in_batches_outside_the_writes(
    db_session: AsyncSession, writer: Writer, engine_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write only queues its documents; each ``index_pending`` takes a batch of them, oldest first,
    and then a search finds them."""
    sqlite_only(engine_name)
    monkeypatch.setattr(search_repository, "INDEX_BATCH", 3)
    indexed_before = await db_session.scalar(text("SELECT count(*) FROM search_index_docsize"))
    ids = await writer.write([("alice", f"quokka number {n}") for n in range(7)], index=False)
    assert await pending(db_session) == 7 + 7  # a message and its session's title each
    assert await db_session.scalar(text("SELECT count(*) FROM search_index_docsize")) == indexed_before
    assert await found(db_session, "alice", "quokka") == []

    repo = SearchRepository(session=db_session)
    moved = []
    while batch := await repo.index_pending():
        moved.append(batch)
        await db_session.commit()
    assert moved == [3, 3, 3, 3, 2]
    assert sorted(await found(db_session, "alice", "quokka"), key=str) == sorted(ids)
    await assert_index_matches_documents(db_session)


async def test_edits_and_deletes_keep_the_index_true_whether_or_not_a_document_was_indexed(
    db_session: AsyncSession, writer: Writer, engine_name: str
) -> None:
    """Indexed and pending documents edited and deleted before the next batch: afterwards the index
    has exactly the documents' current text (FTS5's integrity check agrees on SQLite)."""
    (indexed,) = await writer.write([("alice", "a wombat one")])
    waiting, dropped = await writer.write(
        [("alice", "a wombat two"), ("alice", "a wombat three")], index=False
    )
    edit = text("UPDATE messages SET content = :content WHERE external_id = :external_id")
    await db_session.execute(edit, {"content": "an echidna one", "external_id": indexed})
    await db_session.execute(edit, {"content": "an echidna two", "external_id": waiting})
    await db_session.execute(text("DELETE FROM messages WHERE external_id = :e"), {"e": dropped})
    await db_session.commit()
    if engine_name == "sqlite":  # and a document's own row changed in place, indexed or not
        await db_session.execute(
            text(
                "INSERT INTO search_documents (session_id, message_id, owner_id, owner_token, body)"
                " SELECT session_id, NULL, owner_id, owner_token, 'a bilby' FROM search_documents LIMIT 1"
            )
        )
        await db_session.commit()
        await index_everything(db_session)
        await db_session.execute(text("UPDATE search_documents SET body = 'a numbat' WHERE body = 'a bilby'"))
        await db_session.commit()
    await index_everything(db_session)

    assert await found(db_session, "alice", "wombat") == []
    assert sorted(await found(db_session, "alice", "echidna"), key=str) == sorted([indexed, waiting])
    if engine_name == "sqlite":
        assert await pending(db_session) == 0
        assert (
            await db_session.scalar(
                text("SELECT count(*) FROM search_index WHERE search_index MATCH 'bilby'")
            )
            == 0
        )
        assert (
            await db_session.scalar(
                text("SELECT count(*) FROM search_index WHERE search_index MATCH 'numbat'")
            )
            == 1
        )
        await assert_index_matches_documents(db_session)


async def test_a_document_that_reuses_a_deleted_ones_rowid_is_indexed(
    db_session: AsyncSession, writer: Writer, engine_name: str
) -> None:
    """SQLite gives a new row the largest rowid + 1, so deleting the newest document frees its number
    for the next one: the queue is of documents, not a high-water mark, so the newcomer is indexed."""
    sqlite_only(engine_name)
    (first,) = await writer.write([("alice", "a dugong")])
    newest = await db_session.scalar(text("SELECT max(id) FROM search_documents"))
    await db_session.execute(
        text("DELETE FROM sessions WHERE id = (SELECT session_id FROM search_documents WHERE id = :i)"),
        {"i": newest},
    )
    await db_session.commit()
    (second,) = await writer.write([("alice", "a dugong again")])
    assert await db_session.scalar(text("SELECT max(id) FROM search_documents")) == newest
    assert await found(db_session, "alice", "dugong") == [second]
    assert first != second
    await assert_index_matches_documents(db_session)


async def test_the_indexer_catches_up_in_the_background_and_on_demand(
    database_url: str, db_session: AsyncSession, writer: Writer, engine_name: str, tmp_path: Any
) -> None:
    """The app's task indexes what writes queued within its period; ``catch_up`` does at once."""
    alchemy = create_alchemy_config(Settings(data_dir=str(tmp_path), database_url=database_url))
    indexer = SearchIndexer(alchemy, every_seconds=0.05)
    try:
        (now,) = await writer.write([("alice", "a bandicoot")], index=False)
        assert await indexer.catch_up() == (2 if engine_name == "sqlite" else 0)
        assert await found(db_session, "alice", "bandicoot") == [now]

        indexer.start()
        (later,) = await writer.write([("alice", "a bandicoot later")], index=False)
        for _ in range(100):
            if engine_name != "sqlite" or await pending(db_session) == 0:
                break
            await db_session.rollback()
            await asyncio.sleep(0.05)
        assert set(await found(db_session, "alice", "bandicoot")) == {now, later}
    finally:
        await indexer.stop()
        await alchemy.get_engine().dispose()
