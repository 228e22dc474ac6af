"""Offering a catalogue model in an agent, as an admin does through the API (an agent runs only the
models it offers: ``POST /api/models`` alone does not make a model usable in a chat)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.waits import REQUEST_SECONDS


def _patch(current: dict[str, Any], refs: tuple[str, ...]) -> dict[str, Any]:
    return {"models": [*current["models"], *(ref for ref in refs if ref not in current["models"])]}


async def offer(client: Any, admin: dict[str, str], *refs: str, agent: str = "default") -> None:
    """Add ``refs`` (``provider/modelId``) to what ``agent`` offers; ``client`` is any async HTTP client
    of the app (Litestar's test client or an ``httpx.AsyncClient`` with a base URL)."""
    current = await client.get(f"/api/agents/{agent}", headers=admin)
    assert current.status_code == 200, current.text
    changed = await client.patch(f"/api/agents/{agent}", json=_patch(current.json(), refs), headers=admin)
    assert changed.status_code == 200, changed.text


def offer_sync(base_url: str, admin: dict[str, str], *refs: str, agent: str = "default") -> None:
    """:func:`offer` for a server on a real socket, without an event loop."""
    current = httpx.get(f"{base_url}/api/agents/{agent}", headers=admin, timeout=REQUEST_SECONDS)
    assert current.status_code == 200, current.text
    changed = httpx.patch(
        f"{base_url}/api/agents/{agent}",
        json=_patch(current.json(), refs),
        headers=admin,
        timeout=REQUEST_SECONDS,
    )
    assert changed.status_code == 200, changed.text
