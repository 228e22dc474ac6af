"""The spend ledger's holds (ADR 0085): a live hold counts its estimate against its spender; a hold
whose lease ran out (its process died) counts nothing and is pruned; a settled call counts its cost.
Both engines."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.persistence.repositories import (
    CallSpend,
    SpendHold,
    SpendRepository,
    UsageRepository,
    spent_since,
)

SINCE = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


def _hold(lease: float, estimate: float) -> SpendHold:
    return SpendHold(
        hold_id=uuid.uuid4(),
        kind="call",
        surface="chat-completions",
        estimate_usd=estimate,
        lease_seconds=lease,
    )


async def test_live_holds_count_lapsed_ones_do_not_and_are_pruned(db_session: AsyncSession) -> None:
    ledger = SpendRepository(session=db_session)
    live, lapsed, settled = _hold(600, 0.5), _hold(-1, 0.25), _hold(600, 9.0)
    for hold in (live, lapsed, settled):
        await ledger.hold(hold, "uma", "key-1")
    await ledger.settle_call(
        settled.hold_id, CallSpend(cost_usd=0.125, input_tokens=3, output_tokens=4, model_ref="m/x")
    )
    await db_session.commit()

    assert await ledger.spent_since("user", "uma", SINCE) == 0.5 + 0.125
    assert await ledger.spent_since("key", "key-1", SINCE) == 0.5 + 0.125
    assert await ledger.spent_since("user", "someone-else", SINCE) == 0.0
    assert (
        await spent_since(UsageRepository(session=db_session), "uma", SINCE) == 0.5 + 0.125
    )  # /api/usage/me's
    assert await ledger.holding() == 1

    await ledger.prune_lapsed()
    await db_session.commit()
    assert await ledger.get_one_or_none(id=lapsed.hold_id) is None
    kept = await ledger.get_one(id=settled.hold_id)
    assert (kept.cost_usd, kept.held_until, kept.input_tokens) == (0.125, None, 3)
    assert await ledger.spent_since("user", "uma", SINCE) == 0.5 + 0.125
