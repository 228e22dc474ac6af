"""The search repository over many documents of several owners written in turn, both engines: the
ranking order among the owner's newest matches, owner isolation when other users wrote more and later,
and the PostgreSQL key that lets a search read only the owner's rows (migration 0010)."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from typing import Any

import pytest
from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncSession
from uuid_utils.compat import uuid7

from app.persistence.models import ChatSession, Message
from app.persistence.repositories import AgentRepository, SearchRepository
from app.persistence.repositories import search as search_repository
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

    async def write(self, rows: list[tuple[str, str]]) -> list[str]:
        """``(owner, text)`` in this order; the messages' ids as search answers them."""
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
        return [m["external_id"] for m in messages]


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
