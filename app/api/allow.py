"""Truthful ``Allow`` headers on ``OPTIONS``.

Litestar's automatic ``OPTIONS`` answer lists the methods of the one handler group that made it, not
of the route a path's groups are merged into: ``OPTIONS /api/models`` said ``OPTIONS, POST`` (no
``GET``). This ``before_send`` hook rewrites the header from the route that was matched, which
holds every method of its path.
"""

from __future__ import annotations

from litestar import Litestar
from litestar.datastructures import MutableScopeHeaders
from litestar.routes import HTTPRoute
from litestar.types import Message, Scope


async def truthful_allow(message: Message, scope: Scope) -> None:
    """On the start of an ``OPTIONS`` answer that carries ``Allow``, list every method of its path."""
    if message["type"] != "http.response.start" or scope.get("method") != "OPTIONS":
        return
    headers = MutableScopeHeaders.from_message(message)
    template = scope.get("path_template")
    if "allow" not in headers or template is None:
        return  # a CORS preflight, answered before routing, has no Allow header of its own
    methods = path_methods(scope["litestar_app"], template)
    if methods:
        headers["allow"] = ", ".join(sorted(methods))


def path_methods(app: Litestar, template: str) -> set[str]:
    """The HTTP methods ``app`` serves at the route whose ``path_format`` is ``template``."""
    for route in app.routes:
        if isinstance(route, HTTPRoute) and route.path_format == template:
            return set(route.methods)
    return set()
