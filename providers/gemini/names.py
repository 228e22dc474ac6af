"""What a Gemini model's name says: its version, and whether the model fetches external URLs."""

from __future__ import annotations

import re

from iris.providers.spec import ModelSpec

_VERSION = re.compile(r"gemini-(\d+)(?:\.(\d+))?")
_LEGACY = ("gemini-pro", "gemini-pro-vision", "gemini-ultra")  # the 1.0 names without a number


def model_name(model: ModelSpec) -> str:
    """The name without the ``models/`` prefix Google's own listings carry."""
    return model.model_id.removeprefix("models/")


def parse_version(name: str) -> tuple[int, int] | None:
    """``gemini-2.5-flash`` → ``(2, 5)``, ``gemini-3-pro`` → ``(3, 0)``; ``None`` for a name without one."""
    match = _VERSION.match(name)
    return (int(match[1]), int(match[2] or 0)) if match else None


def takes_external_urls(name: str) -> bool:
    """Public https ``fileUri`` works on current Gemini models, not on 1.x or 2.0 (nor on non-Gemini
    models such as Gemma); a name without a version (``gemini-flash-latest``) is a current alias."""
    if not name.startswith("gemini-") or name in _LEGACY:
        return False
    version = parse_version(name)
    return version is None or version >= (2, 5)
