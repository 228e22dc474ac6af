"""Quotas, so a public deployment survives its guests: per-principal limits that hold across processes.

Every limit is a fixed window counter in the database (``quota_usage``), added to with one atomic upsert
in the caller's transaction: a refusal raises before the caller commits, so it uses nothing, and the
upsert holds the counter's row (PostgreSQL) or the write lock (SQLite) until the caller's transaction
ends, which also serialises a principal's concurrent starts for the concurrent-runs count. Limits are
set per role in the settings (``IRIS_QUOTA_{USER,GUEST}_*``; 0 is no limit); admins have none. A refusal
is 429 ``quota_exceeded`` naming the ``limit``, with ``Retry-After`` the seconds until its window ends.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_scoped_session

from iris.app.errors import QuotaExceeded
from iris.app.persistence.repositories import (
    QuotaRepository,
    RunRepository,
    SpendHold,
    UsageRepository,
    tokens_since,
)
from iris.app.security.auth import Principal
from iris.app.security.budgets import within_budgets
from iris.app.settings import Settings

MINUTE = 60
HOUR = 3600
DAY = 86_400
CONCURRENT_RETRY_SECONDS = 5
"""``Retry-After`` for the concurrent-runs limit, which has no window: a hint to poll, not a promise."""

RUNS_PER_MINUTE = "runs_per_minute"
CONCURRENT_RUNS = "concurrent_runs"
UPLOADS_PER_MINUTE = "uploads_per_minute"
UPLOAD_BYTES_PER_DAY = "upload_bytes_per_day"
GUEST_TOKENS_PER_HOUR = "guest_tokens_per_hour"
KEY_REQUESTS_PER_MINUTE = "key_requests_per_minute"

Db = AsyncSession | async_scoped_session[AsyncSession]
"""The caller's session: its transaction carries the counting (a repository's ``session``)."""


@dataclass(frozen=True, slots=True)
class RoleQuotas:
    """One role's limits (0: none)."""

    runs_per_minute: int
    concurrent_runs: int
    uploads_per_minute: int
    upload_bytes_per_day: int


def role_quotas(settings: Settings, principal: Principal) -> RoleQuotas | None:
    """The principal's limits; ``None`` for admins, who have none."""
    if principal.is_admin:
        return None
    if principal.is_guest:
        return RoleQuotas(
            runs_per_minute=settings.quota_guest_runs_per_minute,
            concurrent_runs=settings.quota_guest_concurrent_runs,
            uploads_per_minute=settings.quota_guest_uploads_per_minute,
            upload_bytes_per_day=settings.quota_guest_upload_bytes_per_day,
        )
    return RoleQuotas(
        runs_per_minute=settings.quota_user_runs_per_minute,
        concurrent_runs=settings.quota_user_concurrent_runs,
        uploads_per_minute=settings.quota_user_uploads_per_minute,
        upload_bytes_per_day=settings.quota_user_upload_bytes_per_day,
    )


async def admit_run(
    db: Db,
    principal: Principal,
    settings: Settings,
    *,
    stored: bool = True,
    hold: SpendHold | None = None,
) -> None:
    """Count a run start; refuse when the principal started too many this minute or, for a ``stored``
    run (one with a run row), already has too many going; refuse one over a budget, else take its
    ``hold`` (iris.app.security.budgets). Stateless calls count per minute only."""
    if principal.key_id is not None and principal.key_tokens_per_minute:
        await _within_tokens(db, principal.user_id, principal.key_id, principal.key_tokens_per_minute)
    quotas = role_quotas(settings, principal)
    if quotas is not None:
        await _within_tokens(db, principal.user_id, None, settings.quota_user_tokens_per_minute)
        await _use(db, principal.user_id, RUNS_PER_MINUTE, MINUTE, quotas.runs_per_minute, 1)
        if stored and quotas.concurrent_runs > 0:
            running = await RunRepository(session=db).running_count(principal.user_id)
            if running >= quotas.concurrent_runs:
                raise QuotaExceeded(
                    f"At most {quotas.concurrent_runs} run(s) may be going at once; wait for one to end.",
                    limit=CONCURRENT_RUNS,
                    allowed=quotas.concurrent_runs,
                    retry_after=CONCURRENT_RETRY_SECONDS,
                )
    await within_budgets(db, principal, settings, hold)


async def _within_tokens(db: Db, owner_id: str, key_id: str | None, allowed: int) -> None:
    """429 ``rate_limited`` when the runs the user (or key) started this minute used ``allowed`` model
    tokens; ``Retry-After`` is the time until the minute ends. Counted from the runs' stored usage, so
    it holds over every process and runs still going count when they finish."""
    if allowed <= 0:
        return
    now = time.time()
    start = int(now // MINUTE) * MINUTE
    since = dt.datetime.fromtimestamp(start, dt.UTC)
    used = await tokens_since(UsageRepository(session=db), owner_id, since, key_id=key_id)
    if used >= allowed:
        raise QuotaExceeded(
            f"The runs started this minute used {used} of {allowed} model tokens; try again when it resets.",
            limit="key_tokens_per_minute" if key_id is not None else "user_tokens_per_minute",
            allowed=allowed,
            retry_after=max(1, math.ceil(start + MINUTE - now)),
            code="rate_limited",
        )


async def admit_upload(db: Db, principal: Principal, settings: Settings, size: int) -> None:
    """Count an upload of ``size`` bytes; refuse one too many this minute, or too many bytes today."""
    quotas = role_quotas(settings, principal)
    if quotas is None:
        return
    await _use(db, principal.user_id, UPLOADS_PER_MINUTE, MINUTE, quotas.uploads_per_minute, 1)
    await _use(db, principal.user_id, UPLOAD_BYTES_PER_DAY, DAY, quotas.upload_bytes_per_day, size)


async def admit_guest_token(db: Db, address: str, settings: Settings) -> None:
    """Count a guest token for a client address. Guests are what leaves counters of subjects that never
    come back, so this also forgets every window that has ended."""
    await QuotaRepository(session=db).prune(int(time.time()))
    await _use(db, f"addr:{address}", GUEST_TOKENS_PER_HOUR, HOUR, settings.quota_guest_tokens_per_hour, 1)


async def admit_key_request(db: Db, key_id: str, allowed: int) -> None:
    """Count one request of an API key with a requests-per-minute limit; one too many is 429
    ``rate_limited``."""
    await _use(db, f"key:{key_id}", KEY_REQUESTS_PER_MINUTE, MINUTE, allowed, 1, code="rate_limited")


async def _use(
    db: Db, subject: str, quota: str, window: int, allowed: int, amount: int, *, code: str | None = None
) -> None:
    if allowed <= 0:
        return
    now = time.time()
    start = int(now // window) * window
    counters = QuotaRepository(session=db)
    total = await counters.add_usage(subject, quota, (start, start + window), amount)
    if total == amount:  # the window's first use: the subject's ended windows of this quota can go
        await counters.prune(int(now), subject=subject, quota=quota)
    if total > allowed:
        raise QuotaExceeded(
            f"The {quota.replace('_', ' ')} quota ({allowed}) is used up; try again when it resets.",
            limit=quota,
            allowed=allowed,
            retry_after=max(1, math.ceil(start + window - now)),
            code=code,
        )
