"""Reading a whole SSE body in the bench scripts."""

from __future__ import annotations

import json
from typing import Any


def frames(body: bytes) -> list[tuple[int, dict[str, Any]]]:
    """``(id, event)`` of every SSE frame (comments skipped; id 0 for a frame without an ``id:`` line)."""
    out: list[tuple[int, dict[str, Any]]] = []
    for block in body.decode().split("\n\n"):
        ident, data = 0, None
        for line in block.split("\n"):
            if line.startswith("id:"):
                ident = int(line[3:].strip())
            elif line.startswith("data:"):
                data = json.loads(line[5:].strip())
        if data is not None:
            out.append((ident, data))
    return out
