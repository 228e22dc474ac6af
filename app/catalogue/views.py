"""The catalogue as the rest of Iris sees it: model specs, effective capabilities, availability, API views."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from iris.app.persistence.models import ModelRow
from iris.app.persistence.repositories import ModelRepository
from iris.app.schemas.catalogue import AgentModel, AgentModels, ModelOut
from iris.providers import (
    AudioSupport,
    Capabilities,
    DocumentSupport,
    ModelSpec,
    NoSuchProvider,
    Provider,
    ReasoningSupport,
    required_key_env,
)
from iris.providers.registry import ProviderRegistry


def model_spec(row: ModelRow) -> ModelSpec:
    """The catalogue row as the provider SPI sees it."""
    return ModelSpec(
        provider=row.provider,
        model_id=row.model_id,
        type=row.type,  # type: ignore[arg-type]  # the column only ever holds the three literals
        supports_tools=row.supports_tools,
        options=dict(row.options),
    )


def effective_capabilities(
    row: ModelRow, provider: Provider, *, max_images_per_message: int | None = None
) -> Capabilities:
    """The provider's capabilities for this model, narrowed by the row: its type, tools flag and limit
    overrides win (a ``text`` row never gets images, whatever the vendor could do), and ``maxImages``
    never exceeds the deployment's per-message cap: the figure a model advertises (catalogue, providers,
    runs all pass the cap) is the one Iris uses. Without a cap (a health probe): the model's own.
    Documents and audio only for a ``multimodal`` row: ``vision`` reads images and nothing more."""
    caps = provider.capabilities(model_spec(row))
    vision = caps.vision and row.type != "text"
    max_images = row.max_images if row.max_images is not None else caps.max_images
    return msgspec.structs.replace(
        caps,
        vision=vision,
        image_mime_types=caps.image_mime_types if vision else (),
        max_images=min(max_images, max_images_per_message or max_images) if vision else 0,
        max_image_bytes=(row.max_image_bytes or caps.max_image_bytes) if vision else 0,
        tools=caps.tools and row.supports_tools,
        documents=caps.documents if row.type == "multimodal" else DocumentSupport(),
        audio=caps.audio if row.type == "multimodal" else AudioSupport(),
    )


def missing_key(row: ModelRow, provider: Provider, registry: ProviderRegistry) -> str | None:
    """The variable the model's key is read from when it is not set (its name only, never a value)."""
    name = required_key_env(provider, model_spec(row))
    return name if name is not None and not registry.context.environ.get(name) else None


def key_hint(provider: Provider, model: ModelSpec) -> str:
    """Where to look when a vendor refuses the key: the variable it was read from, or the option."""
    name = required_key_env(provider, model)
    if name is None:
        return "check the vendor's key variable, or name it with the model's apiKeyEnv option"
    if model.options.get("apiKeyEnv"):
        return f"check {name} (named by the model's apiKeyEnv option)"
    return f"check {name} (or name another variable with the model's apiKeyEnv option)"


def availability(
    row: ModelRow, registry: ProviderRegistry, *, max_images_per_message: int | None = None
) -> tuple[Capabilities | None, str | None]:
    """Effective capabilities when the provider is installed, and why the model cannot run, if it cannot:
    its provider is missing or failed, or the key it needs is not set."""
    try:
        provider = registry.get(row.provider)
    except NoSuchProvider as exc:
        return None, str(exc)
    variable = missing_key(row, provider, registry)
    caps = effective_capabilities(row, provider, max_images_per_message=max_images_per_message)
    return caps, f"{variable} is not set" if variable else None


async def reasoning_by_model(
    models: ModelRepository, registry: ProviderRegistry
) -> dict[str, ReasoningSupport]:
    """How each enabled model with an installed provider reasons (``GET /agent/capabilities``)."""
    out: dict[str, ReasoningSupport] = {}
    rows = await models.list_catalogue(include_disabled=False)
    await registry.ready({row.provider for row in rows})
    for row in rows:
        try:
            out[row.ref] = effective_capabilities(row, registry.get(row.provider)).reasoning
        except NoSuchProvider:
            continue  # not runnable, so nothing to declare
    return out


async def media_by_model(models: ModelRepository, registry: ProviderRegistry) -> tuple[bool, bool]:
    """Whether any enabled model with an installed provider reads PDFs, and whether any hears audio,
    natively (``multimodal.input.pdf``/``audio`` of ``GET /agent/capabilities``)."""
    pdf = audio = False
    rows = await models.list_catalogue(include_disabled=False)
    await registry.ready({row.provider for row in rows})
    for row in rows:
        try:
            caps = effective_capabilities(row, registry.get(row.provider))
        except NoSuchProvider:
            continue
        pdf, audio = pdf or caps.documents.pdf, audio or caps.audio.supported
    return pdf, audio


def model_out(
    row: ModelRow, registry: ProviderRegistry, *, with_options: bool, max_images_per_message: int
) -> ModelOut:
    """The API view of a catalogue row, with effective capabilities when its provider is installed."""
    capabilities, reason = availability(row, registry, max_images_per_message=max_images_per_message)
    return ModelOut(
        id=str(row.id),
        ref=row.ref,
        name=row.name,
        provider=row.provider,
        model_id=row.model_id,
        type=row.type,
        supports_tools=row.supports_tools,
        enabled=row.enabled,
        guest_visible=row.guest_visible,
        available=reason is None,
        created_at=row.created_at,
        updated_at=row.updated_at,
        fallbacks=list(row.fallbacks or ()),
        max_images=row.max_images,
        max_image_bytes=row.max_image_bytes,
        options=dict(row.options) if with_options else None,
        capabilities=capabilities,
        unavailable_reason=reason,
        retry_attempts=row.retry_attempts,
        retry_backoff_seconds=row.retry_backoff_seconds,
    )


def agent_model(row: ModelRow, registry: ProviderRegistry) -> AgentModel:
    """The model-picker view of a catalogue row (seed 002 §4.5, ``type`` included, and whether it can run)."""
    capabilities, reason = availability(row, registry)
    return AgentModel(
        id=str(row.id),
        name=row.name,
        model_id=row.model_id,
        provider=row.provider,
        provider_name=row.provider,
        supports_tools=row.supports_tools,
        type=row.type,
        reasoning=capabilities is not None and capabilities.reasoning.supported,
        pdf=capabilities is not None and capabilities.documents.pdf,
        audio=list(capabilities.audio.mime_types) if capabilities is not None else [],
        available=reason is None,
        unavailable_reason=reason,
    )


def picker_models(
    offered: Sequence[ModelRow], default: ModelRow | None, registry: ProviderRegistry
) -> AgentModels:
    """Exactly the models an agent offers, in its order, less disabled ones; its default when enabled."""
    entries = [agent_model(row, registry) for row in offered if row.enabled]
    usable_default = default if default is not None and default.enabled else None
    return AgentModels(models=entries, default_model_id=str(usable_default.id) if usable_default else None)
