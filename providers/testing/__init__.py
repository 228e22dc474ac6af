"""Test helpers that ship with the provider SPI, so a plugin package can test itself the way Iris
tests its built-ins: the conformance suite, a loopback server for a fake of the vendor's API, and
real images. Needs pytest (a plugin's test dependency); nothing here imports ``app``.

In a plugin's tests::

    from iris.providers.testing import ProviderConformance

    class TestConformance(ProviderConformance):
        factory = staticmethod(create)
        vision_model = ModelSpec(provider="echo", model_id="e1", type="vision")
"""

from iris.providers.testing.conformance import (
    ProviderConformance,
    check_provider,
    check_stream,
    collect,
    events_and_error,
)
from iris.providers.testing.images import image_bytes
from iris.providers.testing.loopback import serve_asgi

__all__ = [
    "ProviderConformance",
    "check_provider",
    "check_stream",
    "collect",
    "events_and_error",
    "image_bytes",
    "serve_asgi",
]
