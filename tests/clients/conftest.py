"""Real third-party clients against Iris on a real socket, with the gateway tests' fakes behind it."""

from tests.gateway.conftest import gateway

__all__ = ["gateway"]
