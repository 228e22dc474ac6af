"""A large document or audio clip sent inline on ``/agent/runs`` (a ``data`` source, tens of MB of
base64) is decoded, checked and hashed without holding the event loop: the app's own loop monitor
(app/api/loop_monitor.py) sees no long block while the run is taken, stored and answered. A real PDF
just under the 32 MiB limit and a WAV at the 25 MiB limit, made in the test; the server's own limits."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.api.loop_monitor import LoopMonitor
from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agui import check_stream
from tests.support.documents import large_pdf, wav_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, run_input, user_message

Client = AsyncTestClient[Litestar]
pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)  # the loop, not the engine
WORST_BLOCK_SECONDS = 0.15
"""Below the issue's 250 ms: decoded on the loop, the WAV alone comes close to that, so 250 ms would not
tell; decoded off it, these bodies leave the loop blocked far less than this."""


@pytest.fixture
def app(settings: Settings) -> Litestar:
    """The app, its loop monitor watching closely and keeping the stack of the worst block."""
    app = create_app(settings, environ={})
    app.state.loop_monitor = LoopMonitor(interval=0.01, stacks=True)
    return app


def inline(kind: str, data: bytes, mime: str, name: str) -> dict[str, Any]:
    source = {"type": "data", "value": base64.b64encode(data).decode(), "mimeType": mime}
    return {"type": kind, "source": source, "metadata": {"filename": name}}


CASES: list[Any] = [
    pytest.param(
        lambda: inline("document", large_pdf(31 * 1024 * 1024), "application/pdf", "report.pdf"),
        "Document 1 (report.pdf): PDF, 2 pages",
        id="31-MiB-pdf",
    ),
    pytest.param(
        lambda: inline("audio", wav_bytes(148, rate=44_100, channels=2), "audio/wav", "talk.wav"),
        "Audio 1 (talk.wav): WAV, 148.00 seconds",
        id="25-MiB-wav",
    ),
]


@pytest.mark.parametrize(("part", "said"), CASES)
async def test_a_large_inline_attachment_never_blocks_the_loop(
    app: Litestar,
    client: Client,
    alice: dict[str, str],
    stored: Stored,
    part: Callable[[], dict[str, Any]],
    said: str,
) -> None:
    thread = str(uuid.uuid4())
    body = json.dumps(run_input(thread, user_message("Read.", part()), model="local/multimodal")).encode()
    monitor: LoopMonitor = app.state.loop_monitor
    await asyncio.sleep(0.3)  # building the body here held the GIL: let the app's loop see that first
    monitor.reset()

    response = await client.post(
        "/agent/runs", content=body, headers={**alice, "content-type": "application/json"}
    )
    await asyncio.sleep(0.05)  # the monitor's last wake-up
    worst, stack = monitor.max_blocked, monitor.worst_stack

    assert response.status_code == 200, response.text[:500]
    assert said in answer_text(check_stream(response.content))
    assert len(await stored.uploads(thread)) == 1
    assert worst < WORST_BLOCK_SECONDS, f"the loop was blocked {worst * 1000:.0f} ms in:\n{stack}"


async def test_a_large_too_deep_body_is_refused_without_blocking_the_loop(
    app: Litestar, client: Client, alice: dict[str, str]
) -> None:
    """A 45 MB string, then a value nested too deep: 422 ``json_too_deep`` (the member is not named in a
    body this large: naming it reads the string in one call that holds the GIL), and the loop free."""
    thread = str(uuid.uuid4())
    deep: Any = "x"
    for _ in range(80):
        deep = [deep]
    body = run_input(thread, user_message("Read."), state={"padding": "A" * 45_000_000, "deep": deep})
    content = json.dumps(body).encode()
    monitor: LoopMonitor = app.state.loop_monitor
    await asyncio.sleep(0.3)
    monitor.reset()

    response = await client.post(
        "/agent/runs", content=content, headers={**alice, "content-type": "application/json"}
    )
    await asyncio.sleep(0.05)
    worst, stack = monitor.max_blocked, monitor.worst_stack

    assert worst < WORST_BLOCK_SECONDS, f"the loop was blocked {worst * 1000:.0f} ms in:\n{stack}"
    assert response.status_code == 422, response.text[:500]
    assert (response.json()["code"], response.json().get("field")) == ("json_too_deep", None)
