"""``GET /api/providers``: what is installed, what it declares, and what failed to load."""

from __future__ import annotations

from iris.providers import Capabilities, OptionSpec
from iris.providers.wire import WireStruct


class ModelCapabilitiesOut(WireStruct):
    """Effective capabilities of one catalogue model served by this provider."""

    ref: str
    capabilities: Capabilities


class ProviderOut(WireStruct):
    """A loaded provider. ``declared`` is what it says a multimodal, tool-using model of its can take;
    ``options`` the keys a catalogue model of it may carry in ``options`` (its own and those Iris reads
    on every model), or ``null`` for a plugin that declares none (any key is then accepted)."""

    id: str
    spec_version: str
    declared: Capabilities
    options: dict[str, OptionSpec] | None
    models: list[ModelCapabilitiesOut]


class ProviderFailureOut(WireStruct):
    """A plugin that did not load; the others are unaffected."""

    id: str
    source: str
    error: str


class ProviderList(WireStruct):
    providers: list[ProviderOut]
    failed: list[ProviderFailureOut]
