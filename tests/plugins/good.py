"""A well-behaved plugin; counts imports so tests can see loading is lazy."""

from __future__ import annotations

from iris_provider_echo import EchoProvider

from iris.providers import ProviderContext

IMPORTED = True


def create(context: ProviderContext) -> EchoProvider:
    return EchoProvider()
