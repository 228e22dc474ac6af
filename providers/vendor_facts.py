"""What a vendor publishes about counting a request, declared by its provider so that the core holds no
vendor's figures: how an image's tokens are estimated, the tokens of one PDF page and of one second of
audio sent natively, and its OpenTelemetry ``gen_ai.provider.name``.

A provider declares them as the optional member ``vendor_facts: VendorFacts`` (like ``model_options``,
see :class:`~iris.providers.spec.Provider`). One that declares none gets :data:`NO_VENDOR_FACTS`, the generic
default: no image, page or audio estimate (the usage then shows none rather than a guess), and its
``id`` as ``gen_ai.provider.name``.
"""

from __future__ import annotations

from dataclasses import dataclass

from iris.providers.image_formulas import ImageFormula
from iris.providers.spec import Provider


@dataclass(frozen=True, slots=True)
class VendorFacts:
    """A vendor's published counting figures; ``None`` where it publishes none."""

    image_formula: ImageFormula | None = None
    """How an image's input tokens are estimated (a model's ``imageCostFormula`` option may name
    another, or ``none``)."""
    pdf_page_tokens: float | None = None
    """Input tokens per PDF page the vendor reads natively."""
    audio_second_tokens: float | None = None
    """Input tokens per second of audio the vendor hears natively."""
    telemetry_name: str | None = None
    """The well-known ``gen_ai.provider.name`` of the vendor (OpenTelemetry's GenAI conventions), when it
    has one; else the provider's id is used."""


NO_VENDOR_FACTS = VendorFacts()
"""What a provider that declares nothing publishes: no figures, its id as the telemetry name."""


def vendor_facts(provider: Provider) -> VendorFacts:
    """The provider's declared :class:`VendorFacts`, or :data:`NO_VENDOR_FACTS`."""
    declared = getattr(provider, "vendor_facts", None)
    return declared if isinstance(declared, VendorFacts) else NO_VENDOR_FACTS


def telemetry_name(provider: Provider) -> str:
    """``gen_ai.provider.name`` for this provider: its declared name, else its id."""
    return vendor_facts(provider).telemetry_name or provider.id
