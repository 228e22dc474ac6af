"""``bench/_load.py``: the benches' load generator (forked client processes) against a real loopback server.

Its figures are only as good as its bookkeeping: every outcome tied to the body it sent, warm-ups left
out of the window, the server's CPU read around the window, an AG-UI error counted as one.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from iris.app.persistence.migrations import REPO_ROOT
from tests.support.http_server import serve_asgi

Scope = dict[str, Any]


def _load_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_load", REPO_ROOT / "bench" / "_load.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_load"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def _agui(scope: Scope, receive: Any, send: Any) -> None:
    """A run per POST: RUN_STARTED, one text delta, then RUN_FINISHED (RUN_ERROR when ``n`` is 2)."""
    if scope["type"] != "http":
        return
    raw = b""
    while True:
        message = await receive()
        raw += message.get("body", b"")
        if not message.get("more_body"):
            break
    number = json.loads(raw)["n"]
    end = {"type": "RUN_ERROR", "message": "two"} if number == 2 else {"type": "RUN_FINISHED"}
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for event in ({"type": "RUN_STARTED"}, {"type": "TEXT_MESSAGE_CONTENT", "delta": str(number)}, end):
        await send(
            {
                "type": "http.response.body",
                "body": b"data: %s\n\n" % json.dumps(event).encode(),
                "more_body": True,
            }
        )
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serve_asgi(_agui) as url:
        yield url


def _server_cpu() -> Any:
    readings = iter([1.0, 3.5])
    return lambda: next(readings)


def test_a_burst_ties_every_outcome_to_its_body_across_processes(base: str) -> None:
    load = _load_module()
    bodies = [{"n": n} for n in range(6)]

    measured = load.burst(f"{base}/run", {}, bodies, 3, _server_cpu())

    assert len(measured.reports) == 3
    assert sorted(b["n"] for b in measured.bodies()) == list(range(6))
    failed = [b["n"] for b, o in zip(measured.bodies(), measured.outcomes, strict=True) if not o.finished]
    assert failed == [2]
    assert measured.errors == ["RUN_ERROR: two"]
    assert all(o.first_text > 0 for o in measured.outcomes)
    assert measured.server_cpu == 2.5
    assert measured.per_request_ms(measured.server_cpu) == pytest.approx(2500 / 6)
    assert measured.client_cpu > 0
    assert "client" in measured.describe()


def test_a_closed_loop_leaves_the_warm_ups_out_of_the_window(base: str) -> None:
    load = _load_module()
    bodies = [{"n": n} for n in range(10, 18)]

    measured = load.closed_loop(
        f"{base}/run",
        {},
        bodies,
        clients=2,
        processes=2,
        seconds=None,
        warm_per_client=2,
        server_cpu=_server_cpu(),
    )

    assert sorted(b["n"] for b in measured.bodies()) == list(range(14, 18))
    assert all(o.finished for o in measured.outcomes)


def test_saturation_is_a_worker_near_one_core_or_the_machine_near_all() -> None:
    load = _load_module()

    def window(worker_cpu: float, server_cpu: float) -> Any:
        report = load.Report(0, [], worker_cpu, 1.0, 0.0)
        return load.Load([], 1.0, [report], server_cpu, [], cores=2)

    assert not window(0.5, 0.5).saturated
    assert window(0.9, 0.0).saturated
    assert window(0.8, 1.0).saturated


async def _responses(scope: Scope, receive: Any, send: Any) -> None:
    """A Responses API stream as Iris's ``/v1/responses`` sends it (``event:`` then ``data:`` lines):
    one text delta when the body's ``n`` is odd, none when it is even."""
    if scope["type"] != "http":
        return
    raw = b""
    while True:
        message = await receive()
        raw += message.get("body", b"")
        if not message.get("more_body"):
            break
    number = json.loads(raw)["n"]
    events: list[dict[str, Any]] = [{"type": "response.created"}]
    if number % 2:
        events.append({"type": "response.output_text.delta", "delta": str(number)})
    events.append({"type": "response.completed"})
    body = b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), json.dumps(e).encode()) for e in events)
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
    )
    await send({"type": "http.response.body", "body": body})


def test_a_responses_api_stream_counts_its_output_text_as_the_answer() -> None:
    load = _load_module()
    with serve_asgi(_responses) as url:
        measured = load.burst(f"{url}/v1/responses", {}, [{"n": 1}, {"n": 2}], 1, _server_cpu(), agui=False)
    by_body = {b["n"]: o for b, o in zip(measured.bodies(), measured.outcomes, strict=True)}
    assert by_body[1].error is None
    assert by_body[1].first_text > 0
    assert by_body[2].error == "no answer text in the stream"
