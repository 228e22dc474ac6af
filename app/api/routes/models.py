"""The model catalogue: everyone signed in reads it, admins change it."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from typing import Annotated
from uuid import UUID

import msgspec
from litestar import Controller, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter

from iris.app.api.openapi import documented
from iris.app.catalogue.fallbacks import check_fallbacks
from iris.app.catalogue.options import check_options
from iris.app.catalogue.views import model_out
from iris.app.errors import Conflict, NotFound
from iris.app.persistence.models import ModelRow
from iris.app.persistence.repositories import AgentRepository, CooldownRepository, ModelRepository
from iris.app.schemas.catalogue import (
    ModelCooldownList,
    ModelCooldownOut,
    ModelCreate,
    ModelList,
    ModelOut,
    ModelUpdate,
)
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.providers.registry import ProviderRegistry

ModelIdParameter = Annotated[
    str, Parameter(description="The model's id (a UUID).", schema_extra={"format": "uuid"})
]
"""Routed as any string, so an id that is no UUID is 404 ``model_not_found`` as the operation documents,
not the router's ``route_not_found``."""


def _model_id(raw: str) -> UUID:
    """The catalogue id in ``raw``; 404 ``model_not_found`` when it is no UUID (no model has that id)."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound("No such model.", code="model_not_found") from None


class ModelController(Controller):
    """``/api/models``."""

    path = "/api/models"
    tags = ["Models"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, ModelRepository, AgentRepository, CooldownRepository, ProviderRegistry]

    @get("/", operation_id="ListModels", operation_class=documented())
    async def list_models(
        self,
        principal: NamedDependency[Principal],
        model_repo: NamedDependency[ModelRepository],
        registry: NamedDependency[ProviderRegistry],
        settings: NamedDependency[Settings],
    ) -> ModelList:
        """Enabled models (admins also see disabled ones; guests only guest-visible ones)."""
        rows: Sequence[ModelRow]
        if principal.is_guest:
            rows = await model_repo.list_guest_visible()
        else:
            rows = await model_repo.list_catalogue(include_disabled=principal.is_admin)
        await registry.ready({r.provider for r in rows})
        return ModelList(
            models=[
                model_out(
                    r,
                    registry,
                    with_options=principal.is_admin,
                    max_images_per_message=settings.max_images_per_message,
                )
                for r in rows
            ]
        )

    @post(
        "/",
        operation_id="CreateModel",
        status_code=201,
        operation_class=documented(
            problems={
                403: ["admin_required"],
                409: ["model_exists", "conflict"],
                422: [
                    "invalid_option",
                    "option_unknown",
                    "secret_in_options",
                    "invalid_fallback",
                    "fallback_not_found",
                ],
            }
        ),
    )
    async def create_model(
        self,
        admin: NamedDependency[Principal],
        data: JSONBody[ModelCreate],
        model_repo: NamedDependency[ModelRepository],
        registry: NamedDependency[ProviderRegistry],
        settings: NamedDependency[Settings],
    ) -> ModelOut:
        """Add a model to the catalogue."""
        await registry.ready([data.provider])
        check_options(data.options, data.provider, registry)
        await check_fallbacks(data.fallbacks, f"{data.provider}/{data.model_id}", model_repo)
        if await model_repo.exists(provider=data.provider, model_id=data.model_id):
            raise Conflict(
                f"{data.provider}/{data.model_id} is already in the catalogue.", code="model_exists"
            )
        row = await model_repo.add(ModelRow(**msgspec.structs.asdict(data)))
        return model_out(
            row, registry, with_options=True, max_images_per_message=settings.max_images_per_message
        )

    @patch(
        "/{modelId:str}",
        operation_id="UpdateModel",
        operation_class=documented(
            problems={
                403: ["admin_required"],
                404: ["model_not_found"],
                409: ["model_exists", "conflict"],
                422: [
                    "invalid_option",
                    "option_unknown",
                    "secret_in_options",
                    "invalid_fallback",
                    "fallback_not_found",
                ],
            }
        ),
    )
    async def update_model(
        self,
        admin: NamedDependency[Principal],
        modelId: ModelIdParameter,
        data: JSONBody[ModelUpdate],
        model_repo: NamedDependency[ModelRepository],
        registry: NamedDependency[ProviderRegistry],
        settings: NamedDependency[Settings],
    ) -> ModelOut:
        """Change the fields present in the body."""
        row = await model_repo.get_one_or_none(id=_model_id(modelId))
        if row is None:
            raise NotFound("No such model.", code="model_not_found")
        changes = {k: v for k, v in msgspec.structs.asdict(data).items() if v is not msgspec.UNSET}
        provider = changes.get("provider", row.provider)
        await registry.ready([provider])
        if "options" in changes or "provider" in changes:
            check_options(changes.get("options", row.options), provider, registry)
        vendor_id = changes.get("model_id", row.model_id)
        if (provider, vendor_id) != (row.provider, row.model_id) and await model_repo.exists(
            provider=provider, model_id=vendor_id
        ):
            raise Conflict(f"{provider}/{vendor_id} is already in the catalogue.", code="model_exists")
        if changes.keys() & {"fallbacks", "provider", "model_id"}:
            fallbacks = changes.get("fallbacks", row.fallbacks)
            await check_fallbacks(fallbacks, f"{provider}/{vendor_id}", model_repo)
        for key, value in changes.items():
            setattr(row, key, value)
        row = await model_repo.update(row)
        return model_out(
            row, registry, with_options=True, max_images_per_message=settings.max_images_per_message
        )

    @delete(
        "/{modelId:str}",
        operation_id="DeleteModel",
        status_code=204,
        operation_class=documented(
            problems={403: ["admin_required"], 404: ["model_not_found"], 409: ["model_in_use"]}
        ),
    )
    async def delete_model(
        self,
        admin: NamedDependency[Principal],
        modelId: ModelIdParameter,
        model_repo: NamedDependency[ModelRepository],
        agent_repo: NamedDependency[AgentRepository],
    ) -> None:
        """Remove a model; refused while an agent uses it as its default."""
        model_id = _model_id(modelId)
        if not await model_repo.exists(id=model_id):
            raise NotFound("No such model.", code="model_not_found")
        if await agent_repo.uses_model(model_id):
            raise Conflict("An agent uses this model as its default; change that first.", code="model_in_use")
        await model_repo.delete(model_id)

    @get(
        "/cooldowns",
        operation_id="ListModelCooldowns",
        operation_class=documented(problems={403: ["admin_required"]}),
    )
    async def list_cooldowns(
        self,
        admin: NamedDependency[Principal],
        model_repo: NamedDependency[ModelRepository],
        cooldown_repo: NamedDependency[CooldownRepository],
    ) -> ModelCooldownList:
        """The models cooling down now, across every process (the one cooling longest first): runs
        with fallbacks skip them until their ``until``."""
        rows = await cooldown_repo.list_cooling(time.time())
        catalogue = await model_repo.list_catalogue(include_disabled=True) if rows else ()
        ids = {model.ref: str(model.id) for model in catalogue}
        return ModelCooldownList(
            cooldowns=[
                ModelCooldownOut(
                    ref=row.model_ref,
                    id=ids.get(row.model_ref),
                    since=_instant(row.window_start),
                    until=_instant(row.cooled_until or row.window_start),
                    failures=row.failures,
                    last_code=row.last_code,
                )
                for row in rows
            ]
        )

    @delete(
        "/{modelId:str}/cooldown",
        operation_id="EndModelCooldown",
        status_code=204,
        operation_class=documented(problems={403: ["admin_required"], 404: ["model_not_found"]}),
    )
    async def end_cooldown(
        self,
        admin: NamedDependency[Principal],
        modelId: ModelIdParameter,
        model_repo: NamedDependency[ModelRepository],
        cooldown_repo: NamedDependency[CooldownRepository],
    ) -> None:
        """End the model's cool-down now and forget its failures: the next run, in any process, tries
        it again. Also 204 when it is not cooling down."""
        row = await model_repo.get_one_or_none(id=_model_id(modelId))
        if row is None:
            raise NotFound("No such model.", code="model_not_found")
        await cooldown_repo.clear(row.ref)


def _instant(unix_seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(unix_seconds, dt.UTC)
