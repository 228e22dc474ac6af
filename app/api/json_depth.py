"""A depth limit on JSON request bodies, checked on the raw bytes before anything decodes them.

msgspec decodes recursively and raises ``RecursionError`` near 1,000 levels, which would surface as a
500; a value a little less deep decodes but cannot be re-encoded inside the event log. So every JSON body
is measured first (regular expressions and ``accumulate``, C speed on the happy path) and one nested past
:data:`MAX_JSON_DEPTH` is refused with 422 ``json_too_deep`` naming the member that holds it (in a
body up to :data:`OFF_LOOP_BYTES`).

A body past :data:`OFF_LOOP_BYTES` (an ``/agent/runs`` body with a document inline as base64 may be
48 MiB) is measured in a worker thread, a slice at a time: each bytes method holds the GIL for as long
as its input is, so whole-body calls would block the event loop as surely as running them on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

import anyio.to_thread
from litestar import Request

from iris.app.errors import Unprocessable

MAX_JSON_DEPTH = 64
"""Most levels of objects and arrays a JSON request body may nest, counted from its root."""
OFF_LOOP_BYTES = 1024 * 1024
"""A larger body is measured in a worker thread, not on the event loop."""
SLICE_BYTES = 1024 * 1024
"""How much of a body one step of :func:`_depth` reads: the longest the loop can wait for the GIL."""

# Members whose values are the client's own JSON: a too-deep value is named by the path down to them.
_FREE_FORM = frozenset(
    {"state", "forwardedProps", "parameters", "payload", "content", "arguments", "options"}
)
_NAMED_LEVELS = 3  # otherwise a too-deep value is named by its first three members
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
# A string is read once, in runs of plain bytes never given back (possessive), and group 2 says whether a
# colon makes it a key; one left open runs to the end of the body. So a long string costs one pass, never
# a backtrack per byte, and no body (an unclosed string, escaped quotes) costs more than one pass.
_TOKEN = re.compile(rb'"([^"\\]*+(?:\\.[^"\\]*+)*+)(?:"(\s*:)?|\\?\Z)|[\[\]{},]', re.DOTALL)


async def refuse_deep_json(request: Request[Any, Any, Any]) -> None:
    """``before_request`` hook: 422 for a JSON body nested deeper than :data:`MAX_JSON_DEPTH`."""
    if request.method not in {"POST", "PUT", "PATCH"} or "json" not in request.headers.get(
        "content-type", ""
    ):
        return
    body = await request.body()
    if len(body) <= OFF_LOOP_BYTES:
        depth = _depth(body)
    else:
        depth = await anyio.to_thread.run_sync(_depth, body)
    if depth <= MAX_JSON_DEPTH:
        return
    # Naming the member reads a string token in one regular-expression call, which holds the GIL for as
    # long as the string is (a large base64 string: a stalled loop): a large body is refused without it.
    field = _too_deep_member(body) if len(body) <= OFF_LOOP_BYTES else None
    raise Unprocessable(
        f"JSON nests deeper than {MAX_JSON_DEPTH} levels of objects and arrays"
        + (f" in {field}." if field else "."),
        code="json_too_deep",
        field=field,
        extra={"maxDepth": MAX_JSON_DEPTH},
    )


def _depth(body: bytes) -> int:
    """How deep ``body``'s objects and arrays nest. Brackets inside strings do not count: with escaped
    backslashes and then escaped quotes taken out, every remaining quote opens or closes a string, so
    the text outside strings is every other piece between quotes (bytes methods only, far cheaper than
    a regular expression over the strings: ADR 0005). Read in slices (:func:`_slices`), carrying whether
    a slice starts inside a string and at what depth."""
    deepest = depth = 0
    in_string = False
    for piece in _slices(body):
        pieces = piece.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')
        outside = b"".join(pieces[1 if in_string else 0 :: 2])
        in_string ^= len(pieces) % 2 == 0  # an odd number of quotes in the slice
        levels = list(accumulate((_STEP[b] for b in outside.translate(None, _NOT_BRACKETS)), initial=depth))
        deepest, depth = max(deepest, *levels), levels[-1]
    return deepest


def _slices(body: bytes) -> Iterator[bytes]:
    """``body`` in pieces of about :data:`SLICE_BYTES`, each cut after a byte that is not a backslash,
    so no escape sequence (a run of backslashes and the byte after it) is ever cut in two."""
    start = 0
    while start < len(body):
        end = min(start + SLICE_BYTES, len(body))
        while end < len(body) and body[end - 1] == 0x5C:
            end += 1
        yield body[start:end]
        start = end


def _too_deep_member(body: bytes) -> str | None:
    """The path (``state``, ``tools[0].parameters``) to the member whose value is too deep."""
    open_containers: list[list[Any]] = []  # [kind, current key or index] per open object or array
    for match in _TOKEN.finditer(body):
        token = match.group(0)
        if match.group(2) is not None and open_containers:
            open_containers[-1][1] = match.group(1).decode(errors="replace")
        elif token in (b"{", b"["):
            if len(open_containers) >= MAX_JSON_DEPTH:
                return _name([member for _, member in open_containers])
            open_containers.append([token, 0 if token == b"[" else None])
        elif token in (b"}", b"]"):
            if open_containers:
                open_containers.pop()
        elif token == b"," and open_containers and open_containers[-1][0] == b"[":
            open_containers[-1][1] += 1
    return None


def _name(members: list[str | int | None]) -> str | None:
    name = ""
    for member in members[:_NAMED_LEVELS]:
        if member is None:
            break
        name += f"[{member}]" if isinstance(member, int) else (f".{member}" if name else member)
        if member in _FREE_FORM:
            break
    return name or None
