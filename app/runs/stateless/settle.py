"""A stateless call's spend (ADR 0085): ``/v1/chat/completions``, ``/v1/responses``, ``/v1/messages``
and ``/api/llm/chat`` store no run, so admission holds their estimated cost in the spend ledger
(:func:`call_hold`) and the call's end settles that row to what it cost — user, key, model, surface,
tokens and cost, never any content — which ``GET /api/usage`` and the budgets count with the runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from sqlalchemy.exc import SQLAlchemyError
from uuid_utils.compat import uuid7

from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories import CallSpend, SpendHold, SpendRepository
from iris.app.runs.engine.orchestrator import Orchestrator
from iris.app.runs.engine.services import RunServices
from iris.app.runs.intake.holds import spend_hold
from iris.app.runs.intake.plan import RunPlan
from iris.app.settings import Settings

log = logging.getLogger("iris.runs")

_SETTLING: set[asyncio.Task[None]] = set()


def call_hold(plan: RunPlan, surface: str, settings: Settings) -> tuple[RunPlan, SpendHold]:
    """The call's hold for admission, and its plan carrying it (to be settled when the call ends)."""
    hold = spend_hold(
        uuid7(),
        plan,
        settings,
        kind="call",
        surface=surface,
        model_ref=plan.model_ref,
        max_output_tokens=plan.request.max_output_tokens,
    )
    return dataclasses.replace(plan, spend_hold=hold.hold_id), hold


async def run_settled(orchestrator: Orchestrator, services: RunServices) -> None:
    """Run a stateless call, then settle its hold, even when the call was cancelled (a client that
    left): the settlement runs to its end on its own task."""
    try:
        await orchestrator.run()
    finally:
        if orchestrator.plan.spend_hold is not None:
            task = asyncio.create_task(_settle(orchestrator, services))
            _SETTLING.add(task)
            task.add_done_callback(_SETTLING.discard)
            await asyncio.shield(task)


async def _settle(orchestrator: Orchestrator, services: RunServices) -> None:
    plan = orchestrator.plan
    assert plan.spend_hold is not None
    usage = orchestrator.billed()
    spent = CallSpend(
        cost_usd=usage.cost.total if usage is not None and usage.cost is not None else None,
        input_tokens=usage.input_tokens if usage is not None else None,
        output_tokens=usage.output_tokens if usage is not None else None,
        model_ref=plan.model_ref,
    )
    try:
        async with session_scope(services.alchemy) as db:
            await SpendRepository(session=db).settle_call(plan.spend_hold, spent)
    except (SQLAlchemyError, OSError) as exc:  # the hold lapses with its lease; the call's cost is lost
        log.error("spend_settle_failed: %s: %s", plan.run_id, exc, extra={"code": "spend_settle_failed"})
