"""Search speed: `GET /api/sessions/search` over a user with 10,000 sessions of 20 messages each.

For each engine — SQLite (the embedded default) and PostgreSQL (a throwaway cluster; skipped, saying
why, without `initdb`) — a real Iris serves a database holding the searching user's 10,000 sessions x
20 messages (200,000 messages, 8 to 40 words each from a 5,000-word vocabulary with a Zipf-like
spread) plus 2,000 sessions of 20 other users, all written through the same tables and triggers as
the app's own writes (the index is what the triggers built). Then, over one kept-alive connection,
the same 300 queries after 20 warm-ups: single words from the most common to the rarest, two-word
queries, and the first letters of a word (search as you type). Figures: p50/p95/p99 per kind and
overall, with the load average. Target: p95 <= 50 ms on each engine.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
from _iris import ROOT, iris
from _results import Results, percentile
from sqlalchemy import insert, select
from uuid_utils.compat import uuid7

from iris.app.persistence.db import create_engine
from iris.app.persistence.models import Agent, ChatSession, Message

SESSIONS = 10_000
MESSAGES_PER_SESSION = 20
OTHER_USERS = 20
OTHER_SESSIONS = 2_000
VOCABULARY = 5_000
QUERIES = 300
WARMUP = 20
TARGET_P95_MS = 50.0
BATCH = 4_000
RESULTS = Results("search")
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def vocabulary(rng: random.Random) -> list[str]:
    """Distinct made-up words of two to four syllables, most common first."""
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


class Texts:
    """Message texts drawn with a Zipf-like spread over the vocabulary (rank r weighs 1/r)."""

    def __init__(self, rng: random.Random, words: list[str]) -> None:
        self.rng = rng
        self.words = words
        self.weights = [1 / (rank + 1) for rank in range(len(words))]

    def text(self) -> str:
        return " ".join(self.rng.choices(self.words, self.weights, k=self.rng.randint(8, 40)))


def queries(rng: random.Random, words: list[str]) -> list[tuple[str, str]]:
    """(kind, query) pairs: common, medium and rare single words, two-word queries and prefixes."""
    bands = {"common": words[5:60], "medium": words[200:1500], "rare": words[2500:]}
    out: list[tuple[str, str]] = []
    for _ in range(QUERIES // 5):
        out += [(kind, rng.choice(band)) for kind, band in bands.items()]
        out.append(("two words", f"{rng.choice(bands['common'])} {rng.choice(bands['medium'])}"))
        out.append(("prefix", rng.choice(bands["medium"])[:3]))
    rng.shuffle(out)
    return out


def session_rows(
    owner: str, agent_id: Any, count: int, texts: Texts
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Sessions of one owner, each with its line of messages (user and assistant in turn)."""
    start = time.time() - 86_400 * 30
    for number in range(count):
        session_id = uuid7()
        stamp = _utc(start + number * 60)
        messages: list[dict[str, Any]] = []
        parent = None
        for position in range(MESSAGES_PER_SESSION):
            pk = uuid7()
            text = texts.text()
            user = position % 2 == 0
            messages.append(
                {
                    "id": pk,
                    "session_id": session_id,
                    "role": "user" if user else "assistant",
                    "content": text,
                    "parts": [{"type": "text", "text": text}] if user else None,
                    "metadata": {},
                    "position": position,
                    "parent_id": parent,
                    "created_at": stamp,
                    "updated_at": stamp,
                }
            )
            parent = pk
        session = {
            "id": session_id,
            "owner_id": owner,
            "thread_id": str(uuid.uuid4()),
            "agent_id": agent_id,
            "title": messages[0]["content"][:80],
            "last_activity_at": stamp,
            "created_at": stamp,
            "updated_at": stamp,
            "pinned": False,
        }
        yield session, messages


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


async def populate(url: str, owner: str, rng: random.Random, words: list[str]) -> float:
    """Write every session and message through the app's tables (the triggers index them); seconds."""
    engine = create_engine(url, sqlite_lock_timeout=60)
    texts = Texts(rng, words)
    began = time.perf_counter()
    try:
        async with engine.begin() as conn:
            agent_id = await conn.scalar(select(Agent.id).where(Agent.slug == "default"))
        owners = [(owner, SESSIONS)] + [
            (f"other-{i}", OTHER_SESSIONS // OTHER_USERS) for i in range(OTHER_USERS)
        ]
        sessions: list[dict[str, Any]] = []
        messages: list[dict[str, Any]] = []

        async def flush() -> None:
            async with engine.begin() as conn:
                await conn.execute(insert(ChatSession), sessions)
                await conn.execute(insert(Message), messages)
            sessions.clear()
            messages.clear()

        for name, count in owners:
            for session, lines in session_rows(name, agent_id, count, texts):
                session["active_leaf_id"] = lines[-1]["id"]
                sessions.append(session)
                messages.extend(lines)
                if len(messages) >= BATCH:
                    await flush()
        if messages:
            await flush()
        async with engine.begin() as conn:  # the planner's statistics, as a live database has them
            await conn.exec_driver_sql("ANALYZE")
    finally:
        await engine.dispose()
    return time.perf_counter() - began


def measure(base: str, token: str, asked: list[tuple[str, str]]) -> dict[str, list[float]]:
    """Milliseconds per query, by kind ("all" too), over one kept-alive connection."""
    timings: dict[str, list[float]] = {"all": []}
    hits = 0
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        for _, query in asked[:WARMUP]:
            client.get("/api/sessions/search", params={"q": query}).raise_for_status()
        for kind, query in asked:
            began = time.perf_counter()
            response = client.get("/api/sessions/search", params={"q": query})
            elapsed = (time.perf_counter() - began) * 1000
            response.raise_for_status()
            hits += bool(response.json()["results"])
            timings.setdefault(kind, []).append(elapsed)
            timings["all"].append(elapsed)
    if hits < len(asked) // 2:
        raise RuntimeError(f"only {hits} of {len(asked)} queries found anything: the data is not indexed")
    return timings


def report(
    engine: str, timings: dict[str, list[float]], populate_seconds: float, load: tuple[float, float]
) -> bool:
    overall = percentile(timings["all"], 95)
    met = overall <= TARGET_P95_MS
    print(
        f"{engine}: {SESSIONS} sessions x {MESSAGES_PER_SESSION} messages (+{OTHER_SESSIONS} of "
        f"{OTHER_USERS} other users) written and indexed in {populate_seconds:.1f} s; "
        f"{len(timings['all'])} queries, "
        f"load {load[0]:.2f} -> {load[1]:.2f}"
    )
    for kind, values in timings.items():
        print(
            f"  {kind:<10} n={len(values):<4} p50 {percentile(values, 50):6.1f} ms"
            f"  p95 {percentile(values, 95):6.1f} ms  p99 {percentile(values, 99):6.1f} ms"
        )
        if kind != "all":
            RESULTS.figure(f"search_{engine}_{kind.replace(' ', '_')}_p95", percentile(values, 95), "ms")
    print(f"  target p95 <= {TARGET_P95_MS:.0f} ms: {'met' if met else 'NOT met'}")
    RESULTS.figure(f"search_{engine}_p50", percentile(timings["all"], 50), "ms")
    RESULTS.figure(f"search_{engine}_p95", overall, "ms", target=f"<= {TARGET_P95_MS:.0f}", met=met)
    RESULTS.figure(f"search_{engine}_p99", percentile(timings["all"], 99), "ms")
    RESULTS.figure(f"search_{engine}_populate", populate_seconds, "s")
    RESULTS.figure(f"search_{engine}_load_average", load[1], "1-minute")
    return met


def bench_engine(engine: str, tmp: str, environ: dict[str, str], url_of: Any) -> None:
    rng = random.Random(24)
    words = vocabulary(rng)
    asked = queries(rng, words)
    with iris(f"{tmp}/{engine}", environ=environ) as (base, token, _):
        seconds = asyncio.run(populate(url_of(), "bench", rng, words))
        load_before = os.getloadavg()[0]
        timings = measure(base, token, asked)
        report(engine, timings, seconds, (load_before, os.getloadavg()[0]))


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="iris-bench-search-") as tmp:
        bench_engine("sqlite", tmp, {}, lambda: f"sqlite+aiosqlite:///{tmp}/sqlite/data/iris.db")
        sys.path.insert(0, str(ROOT))
        from tests.support.postgres import TemporaryCluster

        reason = TemporaryCluster.unavailable_reason()
        if reason:
            print(f"postgresql: skipped: {reason}")
        else:
            cluster = TemporaryCluster()
            url = cluster.start()
            try:
                bench_engine("postgresql", tmp, {"IRIS_DATABASE_URL": url}, lambda: url)
            finally:
                cluster.stop()
    RESULTS.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
