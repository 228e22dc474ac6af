"""Agents as data: a definition is checked once (slug, models, tools) for the API and the models file
alike, and every change is saved with a new immutable version, which the runs it serves point at.

The checks refuse with stable codes: ``invalid_agent_slug``, ``model_not_found`` (a ref the catalogue
does not hold), ``model_not_in_agent`` (a default the agent does not offer), and the tool checks of
:mod:`iris.app.catalogue.agent_tools` (``invalid_tool_name``, ``unknown_tool``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

import msgspec

from iris.app.catalogue.agent_tools import ToolDirectory, check_agent_tools
from iris.app.errors import Unprocessable
from iris.app.persistence.models import Agent, ModelRow
from iris.app.persistence.repositories import AgentRepository, ModelRepository
from iris.app.schemas.agents import AgentCreate, AgentOut, AgentReasoning, AgentSnapshot, ModelPin

SLUG = re.compile(r"[a-z0-9-]{1,64}")


def check_slug(slug: str) -> str:
    """A new agent's slug: 1 to 64 of ``[a-z0-9-]`` (it is a path segment: ``/chat/{slug}``)."""
    if not SLUG.fullmatch(slug):
        raise Unprocessable(
            f"An agent's slug is 1 to 64 characters of a-z, 0-9 and '-' (not {slug!r}).",
            code="invalid_agent_slug",
            field="slug",
        )
    return slug


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """What an agent is, checked, its models resolved to catalogue rows (the default among them; only an
    agent stored before agents had lists may lack one)."""

    name: str
    description: str
    instructions: str
    default_model: ModelRow | None
    models: tuple[ModelRow, ...]
    tools: tuple[str, ...]
    max_tool_iterations: int | None
    guest_access: bool
    reasoning: AgentReasoning
    enabled: bool
    budget_day_usd: float | None = None
    budget_month_usd: float | None = None


async def check_definition(
    body: AgentCreate, models: ModelRepository, tools: ToolDirectory
) -> AgentDefinition:
    """A whole definition (``POST /api/agents``, a models file's ``[[agents]]`` entry)."""
    offered, default = await resolve_models(models, body.models, body.default_model)
    return AgentDefinition(
        name=body.name,
        description=body.description,
        instructions=body.instructions,
        default_model=default,
        models=offered,
        tools=tuple(check_agent_tools(body.tools, tools)),
        max_tool_iterations=body.max_tool_iterations,
        guest_access=body.guest_access,
        reasoning=body.reasoning,
        enabled=body.enabled,
        budget_day_usd=body.budget_day_usd,
        budget_month_usd=body.budget_month_usd,
    )


async def check_changes(
    row: Agent, changes: Mapping[str, Any], models: ModelRepository, tools: ToolDirectory
) -> AgentDefinition:
    """The agent with a ``PATCH`` body's fields applied; only what changes is checked again (a tool
    that has since disappeared does not block renaming the agent)."""
    current = await current_definition(row, models)
    values = {k: v for k, v in changes.items() if k not in ("models", "default_model", "tools")}
    if "models" in changes or "default_model" in changes:
        refs = changes.get("models", [m.ref for m in current.models])
        default = changes.get("default_model", current.default_model.ref if current.default_model else None)
        values["models"], values["default_model"] = await resolve_models(models, refs, default)
    if "tools" in changes:
        values["tools"] = tuple(check_agent_tools(changes["tools"], tools))
    return replace(current, **values)


async def current_definition(row: Agent, models: ModelRepository) -> AgentDefinition:
    """The stored agent as a definition (nothing checked: it was when it was saved)."""
    ids = [UUID(pk) for pk in row.model_ids]
    rows = await models.by_ids([*ids, *([row.default_model_id] if row.default_model_id else [])])
    offered = tuple(rows[pk] for pk in ids if pk in rows)
    return AgentDefinition(
        name=row.name,
        description=row.description,
        instructions=row.instructions,
        default_model=rows.get(row.default_model_id) if row.default_model_id else None,
        models=offered,
        tools=tuple(row.tools),
        max_tool_iterations=row.max_tool_iterations,
        guest_access=row.guest_access,
        reasoning=msgspec.convert(row.reasoning, AgentReasoning),
        enabled=row.enabled,
        budget_day_usd=row.budget_day_usd,
        budget_month_usd=row.budget_month_usd,
    )


async def resolve_models(
    models: ModelRepository, refs: Sequence[str] | None, default_ref: str | None
) -> tuple[tuple[ModelRow, ...], ModelRow]:
    """The models an agent offers (``models``) and its default, which must be one of them; with no
    list, the default alone; with no default, the first of the list."""
    if not refs and default_ref is None:
        raise Unprocessable(
            "An agent offers at least one model: give 'models' or 'defaultModel'.",
            code="validation_failed",
            field="models",
        )
    listed = list(refs) if refs else [default_ref]
    offered: list[ModelRow] = []
    for index, ref in enumerate(listed):
        row = await models.get_by_ref(ref or "")
        field = f"models[{index}]" if refs else "defaultModel"
        if row is None:
            raise Unprocessable(
                f"There is no model {ref!r} in the catalogue.", code="model_not_found", field=field
            )
        if any(known.id == row.id for known in offered):
            raise Unprocessable(
                f"The model {row.ref} is listed twice.", code="validation_failed", field=field
            )
        offered.append(row)
    if default_ref is None:
        return tuple(offered), offered[0]
    default = await models.get_by_ref(default_ref)
    if default is None:
        raise Unprocessable(
            f"There is no model {default_ref!r} in the catalogue.",
            code="model_not_found",
            field="defaultModel",
        )
    if all(row.id != default.id for row in offered):
        raise Unprocessable(
            f"The default model {default.ref} is not among the agent's models; add it to 'models'.",
            code="model_not_in_agent",
            field="defaultModel",
        )
    return tuple(offered), default


def _columns(definition: AgentDefinition) -> dict[str, Any]:
    """The definition as the agent row's column values."""
    return {
        "name": definition.name,
        "description": definition.description,
        "instructions": definition.instructions,
        "default_model_id": definition.default_model.id if definition.default_model else None,
        "model_ids": [str(row.id) for row in definition.models],
        "tools": list(definition.tools),
        "max_tool_iterations": definition.max_tool_iterations,
        "guest_access": definition.guest_access,
        "reasoning": msgspec.to_builtins(definition.reasoning),
        "enabled": definition.enabled,
        "budget_day_usd": definition.budget_day_usd,
        "budget_month_usd": definition.budget_month_usd,
    }


def differences(row: Agent, definition: AgentDefinition) -> list[str]:
    """The definition's fields (API names) that differ from the stored agent."""
    wanted = _columns(definition)
    names = {
        "default_model_id": "defaultModel",
        "model_ids": "models",
        "max_tool_iterations": "maxToolIterations",
        "guest_access": "guestAccess",
        "budget_day_usd": "budgetDayUsd",
        "budget_month_usd": "budgetMonthUsd",
    }
    return [names.get(column, column) for column, value in wanted.items() if getattr(row, column) != value]


def snapshot(slug: str, definition: AgentDefinition) -> dict[str, Any]:
    """The version's record of the definition (:class:`~iris.app.schemas.agents.AgentSnapshot`)."""
    pinned = AgentSnapshot(
        slug=slug,
        name=definition.name,
        description=definition.description,
        instructions=definition.instructions,
        default_model=_pin(definition.default_model) if definition.default_model else None,
        models=[_pin(row) for row in definition.models],
        tools=list(definition.tools),
        max_tool_iterations=definition.max_tool_iterations,
        guest_access=definition.guest_access,
        reasoning=definition.reasoning,
        enabled=definition.enabled,
    )
    result: dict[str, Any] = msgspec.to_builtins(pinned)
    return result


def _pin(row: ModelRow) -> ModelPin:
    return ModelPin(id=str(row.id), ref=row.ref)


async def create_agent(
    agents: AgentRepository, slug: str, definition: AgentDefinition, *, from_file: bool = False
) -> Agent:
    """A new agent at version 1."""
    row = Agent(slug=slug, from_file=from_file, **_columns(definition))
    await agents.save_version(row, snapshot(slug, definition), new=True)
    return row


async def save_changes(agents: AgentRepository, row: Agent, definition: AgentDefinition) -> list[str]:
    """Apply the definition; when anything changed, as the agent's next version. Returns what changed."""
    changed = differences(row, definition)
    if changed:
        for column, value in _columns(definition).items():
            setattr(row, column, value)
        await agents.save_version(row, snapshot(row.slug, definition), new=False)
    return changed


def agent_out(
    row: Agent, models: Mapping[UUID, ModelRow], *, default_iterations: int, admin: bool
) -> AgentOut:
    """The API view of an agent. Users see only the enabled models it offers; admins see every model
    and the instructions."""
    offered = [models[UUID(pk)] for pk in row.model_ids if UUID(pk) in models]
    visible = [m for m in offered if admin or m.enabled]
    default = models.get(row.default_model_id) if row.default_model_id else None
    return AgentOut(
        slug=row.slug,
        name=row.name,
        description=row.description,
        models=[m.ref for m in visible],
        tools=list(row.tools),
        max_tool_iterations=row.max_tool_iterations or default_iterations,
        guest_access=row.guest_access,
        reasoning=msgspec.convert(row.reasoning, AgentReasoning),
        enabled=row.enabled,
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
        default_model=default.ref if default is not None and default in visible else None,
        instructions=row.instructions if admin else None,
        budget_day_usd=row.budget_day_usd,
        budget_month_usd=row.budget_month_usd,
    )
