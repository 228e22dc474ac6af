"""``GET /api/providers``: what is installed, what it declares, and what failed to load."""

from __future__ import annotations

from providers import Capabilities
from providers.wire import WireStruct


class ModelCapabilitiesOut(WireStruct):
    """Effective capabilities of one catalogue model served by this provider."""

    ref: str
    capabilities: Capabilities


class ProviderOut(WireStruct):
    """A loaded provider. ``declared`` is what it says a multimodal, tool-using model of its can take."""

    id: str
    spec_version: str
    declared: Capabilities
    models: list[ModelCapabilitiesOut]


class ProviderFailureOut(WireStruct):
    """A plugin that did not load; the others are unaffected."""

    id: str
    source: str
    error: str


class ProviderList(WireStruct):
    providers: list[ProviderOut]
    failed: list[ProviderFailureOut]
