"""A request's budget hold (ADR 0085), and a stored run's admission that takes it.

The hold is the request's cost estimated before any vendor is called: the input tokens as
:mod:`.estimate` counts them, the request's maximum output (else ``IRIS_BUDGET_HOLD_OUTPUT_TOKENS``) at
the dearer of the output and reasoning prices, and the media prices of what it sends. It lasts the
run's deadline and a minute: a process that died holding it then no longer counts against anyone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from iris.app.catalogue.views import model_spec
from iris.app.errors import Conflict
from iris.app.media.inline_uploads import InlineUploads
from iris.app.persistence.models import Message
from iris.app.persistence.repositories import SpendHold
from iris.app.runs.content.media_prices import media_cost, stored_media
from iris.app.runs.intake.estimate import EstimateSource, estimate_input_tokens, sent_parts
from iris.app.runs.intake.fallbacks import Request
from iris.app.runs.intake.plan import Repositories
from iris.app.runs.intake.resolution import RunAgent, RunnableModel
from iris.app.security.auth import Principal
from iris.app.security.quotas import admit_run
from iris.app.settings import Settings
from iris.providers import Capabilities, ModelSpec, Provider, ToolSpec

LEASE_MARGIN_SECONDS = 60.0
"""Beyond the run's own deadline: time for its closing transaction."""


def _price(pricing: Mapping[str, Any], key: str) -> float:
    value = pricing.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def estimated_cost(source: EstimateSource, max_output_tokens: int | None, settings: Settings) -> float:
    """What the request could cost at most in one model turn (0 for a model without prices)."""
    pricing = source.model.options.get("pricing")
    if not isinstance(pricing, Mapping):
        return 0.0
    output = max_output_tokens if max_output_tokens is not None else settings.budget_hold_output_tokens
    per_output = max(_price(pricing, "output"), _price(pricing, "reasoning"))
    tokens = estimate_input_tokens(source) * _price(pricing, "input") + output * per_output
    media = media_cost(stored_media(sent_parts(source), source.capabilities), pricing)
    return round(tokens / 1_000_000 + media, 8)


def spend_hold(
    hold_id: UUID,
    source: EstimateSource,
    settings: Settings,
    *,
    kind: Literal["run", "call"],
    surface: str,
    model_ref: str,
    max_output_tokens: int | None = None,
    agent: tuple[UUID, tuple[float, float]] | None = None,
) -> SpendHold:
    """The hold admission takes for one request (``agent``: its id and USD budgets, for a run)."""
    deadline = source.model.options.get("runTimeoutSeconds")
    run_seconds = float(deadline) if isinstance(deadline, int | float) else settings.run_timeout_seconds
    return SpendHold(
        hold_id=hold_id,
        kind=kind,
        surface=surface,
        estimate_usd=estimated_cost(source, max_output_tokens, settings),
        lease_seconds=run_seconds + LEASE_MARGIN_SECONDS,
        model_ref=model_ref,
        agent_id=agent[0] if agent is not None else None,
        agent_budgets=agent[1] if agent is not None else (0.0, 0.0),
    )


@dataclass(frozen=True, slots=True)
class _Pending:
    """A stored run's request before its plan exists, as :class:`EstimateSource` reads it."""

    system: str | None
    history: Sequence[Message]
    frontend_tools: Sequence[ToolSpec]
    provider: Provider
    model: ModelSpec
    capabilities: Capabilities


def run_hold(
    run_pk: UUID, request: Request, model: RunnableModel, agent: RunAgent, settings: Settings
) -> SpendHold:
    """A stored run's hold, its id the run's: the run's closing transaction ends it."""
    source = _Pending(
        request.system,
        request.history,
        request.tools,
        model.provider,
        model_spec(model.row),
        model.capabilities,
    )
    return spend_hold(
        run_pk,
        source,
        settings,
        kind="run",
        surface="run",
        model_ref=model.row.ref,
        agent=(agent.pk, agent.budgets),
    )


async def admit_stored_run(
    run_id_taken: bool,
    principal: Principal,
    repos: Repositories,
    settings: Settings,
    inline: InlineUploads | None,
    hold: SpendHold,
) -> None:
    """A stored run's last refusals (a runId used before, the quotas, the budgets: ``hold`` taken);
    then its inline files are stored."""
    if run_id_taken:
        raise Conflict(
            "This runId was already used; every run needs a new one.", code="run_exists", field="runId"
        )
    if inline is not None:
        await inline.admit(repos.session, principal)
    await admit_run(repos.session, principal, settings, hold=hold)  # last check: refusals use no quota
    if inline is not None:  # accepted: the inline files are stored (the intake removes them on failure)
        await inline.store(repos.uploads)
