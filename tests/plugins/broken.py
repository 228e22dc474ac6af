"""Plugins that go wrong in each way the registry must survive."""

from __future__ import annotations

from typing import Any

from iris.providers import ProviderContext
from iris.providers.local import LocalProvider


def raises(context: ProviderContext) -> Any:
    raise RuntimeError("cannot reach the licence server")


def not_a_provider(context: ProviderContext) -> Any:
    return object()


class _OldSpec(LocalProvider):
    spec_version = "0"


def old_spec(context: ProviderContext) -> Any:
    return _OldSpec()


def local_under_another_name(context: ProviderContext) -> Any:
    return LocalProvider()
