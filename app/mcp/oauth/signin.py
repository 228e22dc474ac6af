"""Sign-ins under way: the authorization requests Iris sent users to, by their ``state``, until the
authorization server redirects back to ``GET /api/mcp/oauth/callback``.

A ``state`` is bound to the user and the server it was made for, used once (taken out when the callback
arrives) and good for the interrupt TTL; the code it brings is handed to the call waiting in this
process, which exchanges it (:mod:`iris.app.mcp.oauth.connection`). A callback whose ``state`` is not
waiting here (wrong, used, expired, or made by another process) changes nothing.

This module imports nothing from the MCP SDK (the callback route imports it).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field


class SignInUnknown(Exception):
    """A callback whose ``state`` no sign-in waits for."""


@dataclass(frozen=True, slots=True)
class CallbackParams:
    """What the authorization server's redirect carried (RFC 6749 §4.1.2, RFC 9207's ``iss``)."""

    state: str
    code: str | None = None
    iss: str | None = None
    error: str | None = None
    error_description: str | None = None


@dataclass(eq=False, slots=True)
class PendingSignIn:
    """One authorization request: whose, at which server, until when (monotonic seconds); ``given`` gets
    the callback's parameters, ``outcome`` what came of the exchange (``None``: signed in, else why not)."""

    state: str
    owner: str
    server: str
    expires_at: float
    given: asyncio.Future[CallbackParams] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    outcome: asyncio.Future[str | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def finished(self, problem: str | None) -> None:
        """Tell the callback (if it waits) how the exchange went."""
        if not self.outcome.done():
            self.outcome.set_result(problem)


_pending: dict[str, PendingSignIn] = {}


def expect(state: str, owner: str, server: str, ttl_seconds: float) -> PendingSignIn:
    """Wait for the callback of the authorization request carrying ``state``."""
    _drop_expired()
    pending = PendingSignIn(state, owner, server, time.monotonic() + ttl_seconds)
    _pending[state] = pending
    return pending


def forget(state: str) -> None:
    _pending.pop(state, None)


def deliver(params: CallbackParams) -> PendingSignIn:
    """Hand a callback to the sign-in waiting for its ``state`` (which is then used up);
    :class:`SignInUnknown` when none waits (wrong, used or expired ``state``)."""
    _drop_expired()
    pending = _pending.pop(params.state, None)
    if pending is None or pending.given.done():
        raise SignInUnknown(
            "no sign-in waits for this state: it is wrong, used, expired, or another process's"
        )
    pending.given.set_result(params)
    return pending


def _drop_expired() -> None:
    now = time.monotonic()
    for state in [s for s, p in _pending.items() if p.expires_at < now]:
        _pending.pop(state, None)
