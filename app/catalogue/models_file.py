"""The models file (``IRIS_MODELS_FILE``, TOML): the catalogue and its agents as configuration,
applied idempotently.

Each ``[[models]]`` entry has the fields of ``POST /api/models`` and each ``[[agents]]`` entry those of
``POST /api/agents``, and each ``[[mcpServers]]`` entry those of ``POST /api/mcp-servers`` (same names,
same checks: secrets and unknown option keys, slugs, model refs, tool names and credentials not written
as ``${VAR}`` are refused exactly as the API refuses them). ``[agent]`` is the short form for the default
agent: ``defaultModel`` names its model by ``provider/modelId``, and it then also offers every enabled
``guestVisible`` model of the file.

Applying it upserts models by ``(provider, modelId)``, MCP servers by ``name`` and agents by ``slug``:
the file wins for every field of what it lists (an omitted field takes its default), and those rows
are marked ``from_file``. A
``from_file`` row the file no longer lists is disabled, never deleted (sessions and runs keep pointing
at it). Rows added through the admin API are never touched unless the file starts listing them. An
agent that changes gets a new version; applying the same file again changes nothing.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
from advanced_alchemy.exceptions import DuplicateKeyError, IntegrityError
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.catalogue.agent_tools import KnownTools, check_agent_tools
from iris.app.catalogue.agents import (
    check_definition,
    check_slug,
    create_agent,
    current_definition,
    save_changes,
)
from iris.app.catalogue.defaults import DEFAULT_AGENT_SLUG
from iris.app.catalogue.fallbacks import check_fallbacks
from iris.app.catalogue.mcp_servers import apply_servers
from iris.app.catalogue.options import check_options
from iris.app.errors import IrisError
from iris.app.persistence.db import session_scope
from iris.app.persistence.models import ModelRow
from iris.app.persistence.repositories import AgentRepository, McpServerRepository, ModelRepository
from iris.app.schemas.agents import AgentCreate
from iris.app.schemas.catalogue import ModelCreate
from iris.app.schemas.mcp import McpServerCreate, check_secrets
from iris.providers.registry import ProviderRegistry
from iris.providers.wire import RequestStruct

log = logging.getLogger("iris.catalogue")


class ModelsFileError(ValueError):
    """The models file cannot be read or applied; the message says where and why."""


class AgentDefaults(RequestStruct):
    """``[agent]``, the short form: the default agent's model, as ``provider/modelId``."""

    default_model: str


class ModelsFile(RequestStruct):
    """The whole file."""

    models: list[ModelCreate] = msgspec.field(default_factory=list)
    mcp_servers: list[McpServerCreate] = msgspec.field(default_factory=list)
    agents: list[AgentCreate] = msgspec.field(default_factory=list)
    agent: AgentDefaults | None = None


def load_models_file(path: Path, registry: ProviderRegistry, tools: KnownTools) -> ModelsFile:
    """Read and check the file (types, duplicates, options, slugs, tools) before anything is written;
    model refs are checked when it is applied, against the catalogue it then finds."""
    try:
        with path.open("rb") as handle:
            raw = tomllib.load(handle)
        spec = msgspec.convert(raw, ModelsFile)
    except OSError as exc:
        raise ModelsFileError(f"{path}: {exc.strerror or exc}") from exc
    except (tomllib.TOMLDecodeError, msgspec.ValidationError) as exc:
        raise ModelsFileError(f"{path}: {exc}") from exc
    seen: set[tuple[str, str]] = set()
    for index, model in enumerate(spec.models):
        where = f"{path}: models[{index}] ({model.provider}/{model.model_id})"
        if (model.provider, model.model_id) in seen:
            raise ModelsFileError(f"{where}: listed twice")
        seen.add((model.provider, model.model_id))
        try:
            check_options(model.options, model.provider, registry)
        except IrisError as exc:
            raise ModelsFileError(f"{where}: {exc.detail} [{exc.code}]") from exc
    names: set[str] = set()
    for index, server in enumerate(spec.mcp_servers):
        where = f"{path}: mcpServers[{index}] ({server.name})"
        if server.name in names:
            raise ModelsFileError(f"{where}: listed twice")
        names.add(server.name)
        try:
            check_secrets(dict(getattr(server, "headers", {})), dict(getattr(server, "env", {})))
        except IrisError as exc:
            raise ModelsFileError(f"{where}: {exc.detail} [{exc.code}]") from exc
    slugs: set[str] = set()
    for index, agent in enumerate(spec.agents):
        where = f"{path}: agents[{index}] ({agent.slug})"
        if agent.slug in slugs:
            raise ModelsFileError(f"{where}: listed twice")
        slugs.add(agent.slug)
        try:
            check_slug(agent.slug)
            check_agent_tools(agent.tools, tools)
        except IrisError as exc:
            raise ModelsFileError(f"{where}: {exc.detail} [{exc.code}]") from exc
    if spec.agent is not None and DEFAULT_AGENT_SLUG in slugs:
        raise ModelsFileError(
            f"{path}: [agent] and an [[agents]] entry {DEFAULT_AGENT_SLUG!r} both configure the default "
            "agent; keep one"
        )
    return spec


_FIELDS = tuple(ModelCreate.__struct_fields__)


def _differences(row: ModelRow, wanted: dict[str, Any]) -> list[str]:
    return [name for name in _FIELDS if getattr(row, name) != wanted[name]]


async def apply_models_file(config: SQLAlchemyAsyncConfig, spec: ModelsFile, tools: KnownTools) -> list[str]:
    """Bring the catalogue in line with the file, in one transaction; one line per change made."""
    changes: list[str] = []
    try:
        async with session_scope(config) as session:
            models = ModelRepository(session=session)
            listed: set[tuple[str, str]] = set()
            for entry in spec.models:
                listed.add((entry.provider, entry.model_id))
                wanted = msgspec.structs.asdict(entry)
                row = await models.get_one_or_none(provider=entry.provider, model_id=entry.model_id)
                if row is None:
                    await models.add(ModelRow(**wanted, from_file=True))
                    changes.append(f"added {entry.provider}/{entry.model_id}")
                    continue
                differing = _differences(row, wanted)
                if differing or not row.from_file:
                    for name in differing:
                        setattr(row, name, wanted[name])
                    row.from_file = True
                    await models.update(row)
                    what = ", ".join(differing) if differing else "now managed by the file"
                    changes.append(f"updated {row.ref}: {what}")
            for entry in spec.models:  # once every listed model is in: they may name each other
                try:
                    await check_fallbacks(entry.fallbacks, f"{entry.provider}/{entry.model_id}", models)
                except IrisError as exc:
                    where = f"models ({entry.provider}/{entry.model_id})"
                    raise ModelsFileError(f"{where}: {exc.detail} [{exc.code}]") from exc
            for row in await models.list_from_file():
                if (row.provider, row.model_id) not in listed and row.enabled:
                    row.enabled = False
                    await models.update(row)
                    changes.append(f"disabled {row.ref} (no longer in the file)")
            servers = McpServerRepository(session=session)
            changes += await apply_servers(servers, spec.mcp_servers)
            # agents may name the file's servers and those added through the API
            known = tools.with_servers([row.name for row in await servers.list_all(include_disabled=True)])
            agents = AgentRepository(session=session)
            changes += await _apply_agents(models, agents, spec, known)
            if spec.agent is not None:
                changes += await _default_agent(models, agents, spec)
    except (DuplicateKeyError, IntegrityError) as exc:
        raise ModelsFileError("another process changed the catalogue at the same time; apply again") from exc
    for change in changes:
        log.info("models file: %s", change)
    return changes


async def _apply_agents(
    models: ModelRepository, agents: AgentRepository, spec: ModelsFile, tools: KnownTools
) -> list[str]:
    """``[[agents]]``: create, change (a new version) or disable what the file manages."""
    changes: list[str] = []
    for index, entry in enumerate(spec.agents):
        try:
            definition = await check_definition(entry, models, tools)
        except IrisError as exc:
            raise ModelsFileError(f"agents[{index}] ({entry.slug}): {exc.detail} [{exc.code}]") from exc
        row = await agents.get_by_slug(entry.slug)
        if row is None:
            await create_agent(agents, entry.slug, definition, from_file=True)
            changes.append(f"added agent {entry.slug}")
            continue
        managed = row.from_file
        row.from_file = True
        changed = await save_changes(agents, row, definition)
        if changed:
            changes.append(f"updated agent {row.slug}: {', '.join(changed)} (version {row.version})")
        elif not managed:
            await agents.update(row)
            changes.append(f"updated agent {row.slug}: now managed by the file")
    listed = {entry.slug for entry in spec.agents}
    for row in await agents.list_from_file():
        if row.slug not in listed and row.enabled:
            await save_changes(agents, row, replace(await current_definition(row, models), enabled=False))
            changes.append(f"disabled agent {row.slug} (no longer in the file)")
    return changes


async def _default_agent(models: ModelRepository, agents: AgentRepository, spec: ModelsFile) -> list[str]:
    """``[agent]``: the default agent's model, and every enabled guest-visible model of the file added to
    what it offers (nothing it offers already is removed)."""
    assert spec.agent is not None
    wanted = spec.agent.default_model
    row = await models.get_by_ref(wanted)
    if row is None or not row.enabled:
        raise ModelsFileError(f"[agent] defaultModel: no enabled model {wanted!r} in the catalogue")
    default = await agents.get_by_slug(DEFAULT_AGENT_SLUG)
    if default is None:
        raise ModelsFileError(f"[agent]: there is no {DEFAULT_AGENT_SLUG!r} agent to configure")
    current = await current_definition(default, models)
    offered = list(current.models)
    guest_visible = [f"{m.provider}/{m.model_id}" for m in spec.models if m.guest_visible and m.enabled]
    for ref in [wanted, *guest_visible]:
        model = await models.get_by_ref(ref)
        if model is not None and all(known.id != model.id for known in offered):
            offered.append(model)
    added = [model.ref for model in offered[len(current.models) :]]
    await save_changes(agents, default, replace(current, default_model=row, models=tuple(offered)))
    moved = current.default_model is None or current.default_model.id != row.id
    changes = [f"default agent: default model is now {row.ref}"] if moved else []
    return changes + ([f"default agent: now offers {', '.join(added)}"] if added else [])


def describe(changes: Sequence[str]) -> str:
    """What ``models sync`` prints."""
    return "\n".join(changes) if changes else "nothing to change: the catalogue already matches the file"
