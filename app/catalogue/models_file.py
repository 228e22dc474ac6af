"""The models file (``IRIS_MODELS_FILE``, TOML): the catalogue as configuration, applied idempotently.

Each ``[[models]]`` entry has the fields of ``POST /api/models`` (same names, same checks, options
included: secrets and unknown keys are refused exactly as the API refuses them). ``[agent]``
``defaultModel`` names the default agent's model by ``provider/modelId``; its model list is the
picker's, i.e. the entries with ``guestVisible = true``.

Applying it upserts by ``(provider, modelId)``: the file wins for every field of the models it lists,
and those rows are marked ``from_file``. A ``from_file`` row the file no longer lists is disabled, never
deleted (sessions and runs keep pointing at it). Rows added through the admin API are never touched
unless the file starts listing them. Applying the same file again changes nothing.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
from advanced_alchemy.exceptions import DuplicateKeyError, IntegrityError
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from app.catalogue.defaults import DEFAULT_AGENT_SLUG
from app.catalogue.options import check_options
from app.errors import IrisError
from app.persistence.db import session_scope
from app.persistence.models import ModelRow
from app.persistence.repositories import AgentRepository, ModelRepository
from app.schemas.catalogue import ModelCreate
from providers.registry import ProviderRegistry
from providers.wire import RequestStruct

log = logging.getLogger("iris.catalogue")


class ModelsFileError(ValueError):
    """The models file cannot be read or applied; the message says where and why."""


class AgentDefaults(RequestStruct):
    """``[agent]``: the default agent's model, as ``provider/modelId``."""

    default_model: str


class ModelsFile(RequestStruct):
    """The whole file."""

    models: list[ModelCreate] = msgspec.field(default_factory=list)
    agent: AgentDefaults | None = None


def load_models_file(path: Path, registry: ProviderRegistry) -> ModelsFile:
    """Read and check the file (types, duplicates, options) before anything is written."""
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
    return spec


_FIELDS = tuple(ModelCreate.__struct_fields__)


def _differences(row: ModelRow, wanted: dict[str, Any]) -> list[str]:
    return [name for name in _FIELDS if getattr(row, name) != wanted[name]]


async def apply_models_file(config: SQLAlchemyAsyncConfig, spec: ModelsFile) -> list[str]:
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
            for row in await models.list_from_file():
                if (row.provider, row.model_id) not in listed and row.enabled:
                    row.enabled = False
                    await models.update(row)
                    changes.append(f"disabled {row.ref} (no longer in the file)")
            if spec.agent is not None:
                changes += await _default_model(models, AgentRepository(session=session), spec.agent)
    except (DuplicateKeyError, IntegrityError) as exc:
        raise ModelsFileError("another process changed the catalogue at the same time; apply again") from exc
    for change in changes:
        log.info("models file: %s", change)
    return changes


async def _default_model(models: ModelRepository, agents: AgentRepository, agent: AgentDefaults) -> list[str]:
    row = await models.get_by_ref(agent.default_model)
    if row is None or not row.enabled:
        raise ModelsFileError(
            f"[agent] defaultModel: no enabled model {agent.default_model!r} in the catalogue"
        )
    default = await agents.get_by_slug(DEFAULT_AGENT_SLUG)
    if default is None:
        raise ModelsFileError(f"[agent]: there is no {DEFAULT_AGENT_SLUG!r} agent to configure")
    if default.default_model_id == row.id:
        return []
    default.default_model_id = row.id
    await agents.update(default)
    return [f"default agent: default model is now {row.ref}"]


def describe(changes: Sequence[str]) -> str:
    """What ``models sync`` prints."""
    return "\n".join(changes) if changes else "nothing to change: the catalogue already matches the file"
