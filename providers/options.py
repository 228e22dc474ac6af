"""What a provider reads from a catalogue row's ``options``, and which key variable it needs, as data.

Both are optional members of a :class:`~iris.providers.spec.Provider` (a plugin written before them keeps
loading): ``model_options``, a mapping of option key to :class:`OptionSpec`, lets the catalogue refuse a
misspelt or mistyped key when a model is saved instead of the provider silently ignoring it;
``key_env(model)``, the name of the environment variable the provider reads the model's API key from
(``None`` when it needs none), lets the catalogue list a model whose key is not set as unavailable and
refuse a run on it before anything is streamed. Only variable *names* ever leave a provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

OptionType = Literal["string", "integer", "number", "boolean", "object", "array"]


class OptionSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One option key: its JSON type, what it does, and (for strings) the values it may take."""

    type: OptionType
    description: str
    choices: tuple[str, ...] = ()

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` (decoded JSON) has this type and, for a closed string, is one of its values."""
        match self.type:
            case "string":
                return isinstance(value, str) and (not self.choices or value in self.choices)
            case "integer":
                return isinstance(value, int) and not isinstance(value, bool)
            case "number":
                return isinstance(value, int | float) and not isinstance(value, bool)
            case "boolean":
                return isinstance(value, bool)
            case "object":
                return isinstance(value, Mapping)
            case "array":
                return isinstance(value, list | tuple)

    def describe(self) -> str:
        """``string``, or ``one of "a", "b"`` for a closed string."""
        if self.choices:
            return "one of " + ", ".join(f'"{c}"' for c in self.choices)
        return self.type


BASE_URL = OptionSpec(type="string", description="the vendor's API base URL (a proxy or compatible server)")
API_KEY_ENV = OptionSpec(
    type="string", description="the environment variable holding this model's API key, instead of the default"
)
MAX_TOKENS = OptionSpec(type="integer", description="output token limit when the request sets none")
REASONING = OptionSpec(
    type="boolean",
    description="whether this model reasons (overrides what the provider infers from its name)",
)


def declared_options(provider: object) -> Mapping[str, OptionSpec] | None:
    """The option keys ``provider`` reads, or ``None`` when it declares none (then any key is accepted)."""
    specs = getattr(provider, "model_options", None)
    return specs if isinstance(specs, Mapping) else None


def required_key_env(provider: object, model: Any) -> str | None:
    """The variable ``provider`` reads ``model``'s key from; ``None`` when it needs none or does not say."""
    key_env = getattr(provider, "key_env", None)
    if not callable(key_env):
        return None
    name = key_env(model)
    return name if isinstance(name, str) and name else None
