"""The one check of a catalogue row's ``options``, shared by the admin API and the models file.

A model's options are the keys its provider declares (``model_options`` in the SPI) plus
:data:`CORE_OPTIONS`, the keys Iris itself reads on every model whatever its vendor. Anything else is
refused with 422 ``option_unknown`` naming the key and the accepted ones, instead of being stored and
silently ignored; a value of the wrong type is 422 ``invalid_option``; credential-like keys are 422
``secret_in_options`` first, at any depth. Values are JSON as the OpenAPI document's ``JsonValue``
says, which leaves out arrays directly inside arrays (a TypeScript limit): such a value is 422
``invalid_option`` too, so nothing stored breaks ``GET /api/models``'s schema. A provider that is not
installed, or a plugin that declares no options, cannot be checked: then only secrets, the values'
shape and the core keys' types are.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from iris.app.errors import Unprocessable
from iris.providers import NoSuchProvider, OptionSpec, declared_options, image_formulas
from iris.providers.registry import ProviderRegistry

FIRST_TOKEN_OPTION = "firstTokenTimeoutSeconds"  # noqa: S105 (seconds, not a credential)
IDLE_OPTION = "idleTimeoutSeconds"
RUN_OPTION = "runTimeoutSeconds"
DEADLINE_OPTIONS = (FIRST_TOKEN_OPTION, IDLE_OPTION, RUN_OPTION)
"""Catalogue ``options`` keys (core options, not a vendor's) that override the deadline settings."""

CORE_OPTIONS: dict[str, OptionSpec] = {
    # Run deadlines (app/runs/intake/deadlines.py reads them; check_deadline_options bounds them).
    FIRST_TOKEN_OPTION: OptionSpec(type="number", description="seconds to wait for the first content"),
    IDLE_OPTION: OptionSpec(type="number", description="seconds allowed between two pieces of content"),
    RUN_OPTION: OptionSpec(type="number", description="seconds a whole run may take"),
    # Reasoning and cost.
    "enableThinking": OptionSpec(type="boolean", description="ask the model to reason before it answers"),
    "thinkingBudget": OptionSpec(type="integer", description="token budget for the model's reasoning"),
    "reasoningEffort": OptionSpec(
        type="string", description="default reasoning effort", choices=("low", "medium", "high")
    ),
    "pricing": OptionSpec(
        type="object",
        description=(
            "prices per million tokens: input, output, and optional reasoning, cachedInput, image;"
            " per unit sent: optional perImage, perPdfPage, perAudioSecond"
        ),
    ),
    "imageCostFormula": OptionSpec(
        type="string",
        description="the published formula estimating image tokens (default: the vendor's own)",
        choices=(*image_formulas.PUBLISHED, "none"),
    ),
}
"""Option keys every model may carry, read by Iris rather than by its provider. Add a key here when core
code starts reading one from ``ModelRow.options``; a provider's own keys belong in its ``model_options``."""

_SECRET_KEY = re.compile(r"api[_-]?key|secret|token|password|authorization|credential", re.IGNORECASE)
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")


def reject_secrets(options: Mapping[str, Any], path: str = "options", *, known: Collection[str] = ()) -> None:
    """Refuse option keys that look like credentials: secrets live in the environment, not the database.

    Keys ending in ``Env`` (``apiKeyEnv``) name an environment variable instead, which is allowed
    unless it names one of Iris's own settings. ``known`` keys are declared options (the name
    ``firstTokenTimeoutSeconds`` is no token); their nested keys are still checked.
    """
    for key, value in options.items():
        where = f"{path}.{key}"
        if key.endswith("Env"):
            if not isinstance(value, str) or not _ENV_NAME.fullmatch(value) or value.startswith("IRIS_"):
                raise Unprocessable(
                    f"'{where}' must name a vendor environment variable (e.g. OPENROUTER_API_KEY).",
                    code="invalid_option",
                    field=where,
                )
            continue
        if key not in known and _SECRET_KEY.search(key):
            raise Unprocessable(
                f"'{where}' looks like a credential; set the vendor's environment variable instead.",
                code="secret_in_options",
                field=where,
            )
        if isinstance(value, Mapping):
            reject_secrets(value, where)


def reject_nested_arrays(value: Any, where: str) -> None:
    """422 ``invalid_option`` for an array directly inside an array anywhere in ``value`` (the document's
    ``JsonValue`` has none, so a client generated from it could not read the model back)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            reject_nested_arrays(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, list):
                raise Unprocessable(
                    f"'{where}[{index}]' is an array inside an array, which options cannot hold; "
                    "wrap it in an object.",
                    code="invalid_option",
                    field=f"{where}[{index}]",
                )
            reject_nested_arrays(item, f"{where}[{index}]")


def accepted_options(provider_id: str, registry: ProviderRegistry) -> dict[str, OptionSpec] | None:
    """Every key a model of ``provider_id`` may carry; ``None`` when the provider's own are unknown."""
    try:
        declared = declared_options(registry.get(provider_id))
    except NoSuchProvider:
        return None
    return None if declared is None else {**CORE_OPTIONS, **declared}


def check_options(options: Mapping[str, Any], provider_id: str, registry: ProviderRegistry) -> None:
    """Refuse secrets, unknown keys and mistyped values (422, naming the key); see the module docstring."""
    accepted = accepted_options(provider_id, registry)
    known = accepted if accepted is not None else CORE_OPTIONS
    reject_secrets(options, known=known)
    for key, value in sorted(options.items()):
        reject_nested_arrays(value, f"options.{key}")
    for key, value in sorted(options.items()):  # the first failure in key order, on every database
        spec = known.get(key)
        if spec is None:
            if accepted is None:
                continue
            raise Unprocessable(
                f"'{provider_id}' models take no option '{key}'; accepted: {', '.join(sorted(accepted))}.",
                code="option_unknown",
                field=f"options.{key}",
                extra={"accepted": sorted(accepted)},
            )
        if not spec.accepts(value):
            raise Unprocessable(
                f"'options.{key}' must be {spec.describe()} ({spec.description}).",
                code="invalid_option",
                field=f"options.{key}",
            )
    check_deadline_options(options)


def check_deadline_options(options: Mapping[str, Any]) -> None:
    """422 ``invalid_option`` unless every deadline override present is a positive number of seconds."""
    for key in DEADLINE_OPTIONS:
        if key not in options:
            continue
        value = options[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86_400:
            raise Unprocessable(
                f"'options.{key}' must be a number of seconds above 0 and at most 86400.",
                code="invalid_option",
                field=f"options.{key}",
            )
