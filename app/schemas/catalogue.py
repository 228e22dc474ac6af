"""Model catalogue and agent model-picker shapes."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec

from iris.providers import Capabilities
from iris.providers.wire import RequestStruct, WireStruct

ModelType = Literal["text", "vision", "multimodal"]
ProviderId = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]{0,63}$")]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
VendorModelId = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
ImageCount = Annotated[int, msgspec.Meta(ge=0, le=64)]
ByteCount = Annotated[int, msgspec.Meta(ge=1, le=1 << 30)]
ModelRef = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]{0,63}/.{1,200}$", max_length=270)]
"""A catalogue model named ``provider/modelId``."""
Fallbacks = Annotated[list[ModelRef], msgspec.Meta(max_length=8)]
RetryAttempts = Annotated[int, msgspec.Meta(ge=1, le=10)]
BackoffSeconds = Annotated[float, msgspec.Meta(ge=0, le=60)]


class ModelOut(WireStruct, omit_defaults=True):
    """A catalogue entry with its effective capabilities. ``available`` is false when it cannot run, and
    ``unavailableReason`` says why: its provider is not installed or failed to load (``capabilities``
    absent then), or the variable its key is read from is not set (``OPENAI_API_KEY is not set``).
    ``options`` is for admins only. ``fallbacks`` are the models a run moves to, in order, when this
    one fails before any content; ``retryAttempts`` and ``retryBackoffSeconds`` are absent when the
    model follows the settings."""

    id: str
    ref: str
    name: str
    provider: str
    model_id: str
    type: str
    supports_tools: bool
    enabled: bool
    guest_visible: bool
    available: bool
    created_at: dt.datetime
    updated_at: dt.datetime
    fallbacks: list[str]
    max_images: int | None = None
    max_image_bytes: int | None = None
    options: dict[str, Any] | None = None
    capabilities: Capabilities | None = None
    unavailable_reason: str | None = None
    retry_attempts: int | None = None
    retry_backoff_seconds: float | None = None


class ModelList(WireStruct):
    """``GET /api/models``."""

    models: list[ModelOut]


class ModelCooldownOut(WireStruct, omit_defaults=True):
    """A model cooling down: every process's runs with fallbacks skip it from ``since`` to ``until``,
    because it failed ``IRIS_COOLDOWN_FAILURES`` times within ``IRIS_COOLDOWN_SECONDS``. ``lastCode``
    is the run-error code of its latest failure (``provider_rate_limit``, ``provider_unavailable``,
    ``provider_timeout``); ``failures`` counts its failures since (runs try it when all their models
    are cooling down). ``id`` is the catalogue model's, absent when none has this ``ref`` any more."""

    ref: str
    since: dt.datetime
    until: dt.datetime
    failures: int
    last_code: str | None = None
    id: str | None = None


class ModelCooldownList(WireStruct):
    """``GET /api/models/cooldowns``."""

    cooldowns: list[ModelCooldownOut]


class ModelCreate(RequestStruct):
    """``POST /api/models``. Secrets never go in ``options``: vendors read them from the environment.
    ``fallbacks`` name catalogue models (``provider/modelId``, not this one); ``retryAttempts`` (the
    first request included) and ``retryBackoffSeconds`` override ``IRIS_RETRY_*`` for this model."""

    name: Name
    provider: ProviderId
    model_id: VendorModelId
    type: ModelType
    supports_tools: bool = False
    enabled: bool = True
    guest_visible: bool = False
    options: dict[str, Any] = msgspec.field(default_factory=dict)
    max_images: ImageCount | None = None
    max_image_bytes: ByteCount | None = None
    fallbacks: Fallbacks = msgspec.field(default_factory=list)
    retry_attempts: RetryAttempts | None = None
    retry_backoff_seconds: BackoffSeconds | None = None


class ModelUpdate(RequestStruct):
    """``PATCH /api/models/{id}``: only the fields present change; ``null`` clears an override."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    provider: ProviderId | msgspec.UnsetType = msgspec.UNSET
    model_id: VendorModelId | msgspec.UnsetType = msgspec.UNSET
    type: ModelType | msgspec.UnsetType = msgspec.UNSET
    supports_tools: bool | msgspec.UnsetType = msgspec.UNSET
    enabled: bool | msgspec.UnsetType = msgspec.UNSET
    guest_visible: bool | msgspec.UnsetType = msgspec.UNSET
    options: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    max_images: ImageCount | msgspec.UnsetType | None = msgspec.UNSET
    max_image_bytes: ByteCount | msgspec.UnsetType | None = msgspec.UNSET
    fallbacks: Fallbacks | msgspec.UnsetType = msgspec.UNSET
    retry_attempts: RetryAttempts | msgspec.UnsetType | None = msgspec.UNSET
    retry_backoff_seconds: BackoffSeconds | msgspec.UnsetType | None = msgspec.UNSET


class AgentModel(WireStruct, omit_defaults=True):
    """One entry of seed 002's model picker; ``type`` tells the frontend whether images may be attached,
    ``pdf`` whether it reads PDFs natively (any other model gets their text), ``audio`` the audio types it
    hears (empty: audio is refused), ``reasoning`` whether asking it to think first
    (``enableThinking``) shows its reasoning, ``available`` whether it can run now
    (``unavailableReason`` says why not, as in ``GET /api/models``)."""

    id: str
    name: str
    model_id: str
    provider: str
    provider_name: str
    supports_tools: bool
    type: str
    reasoning: bool
    pdf: bool
    audio: list[str]
    available: bool
    unavailable_reason: str | None = None


class AgentModels(WireStruct):
    """``GET /api/agents/{slug}/models``."""

    models: list[AgentModel]
    default_model_id: str | None
