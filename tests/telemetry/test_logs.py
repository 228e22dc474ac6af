"""Log lines of a run carry its ids: one JSON object per line with ``IRIS_LOG_FORMAT=json`` (run, thread
and trace ids, the problem code on errors), readable text by default; `iris serve` writes every line,
uvicorn's access log included, in the configured format."""

from __future__ import annotations

import io
import json
import logging
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from iris.app.settings import Settings
from iris.app.telemetry.logs import JsonFormatter, RunIds, TextFormatter, run_context
from tests.conftest import JWT_SECRET
from tests.support.fake_openai import FakeOpenAI
from tests.support.iris_process import iris_process
from tests.support.postgres import free_port
from tests.support.runs import of_type, run, run_input, user_message
from tests.support.waits import REQUEST_SECONDS
from tests.telemetry.conftest import with_openai_model


def captured(formatter: logging.Formatter) -> tuple[logging.Handler, io.StringIO]:
    """A handler on the root logger writing with ``formatter`` as lines are logged (as `serve`'s does)."""
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.setFormatter(formatter)
    logging.getLogger().addHandler(handler)
    return handler, sink


@pytest.mark.parametrize("engine_name", ["sqlite"])
async def test_a_failed_runs_json_line_carries_its_ids_and_code(
    settings: Settings,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
) -> None:
    async with with_openai_model(settings, openai, auth, span_exporter=InMemorySpanExporter()) as client:
        handler, sink = captured(JsonFormatter())  # after the app configured logging
        try:
            openai[0].server_error()
            thread = str(uuid.uuid4())
            body_in = run_input(thread, user_message("hi"), model="openai/gpt-4o")
            events = await run(client, auth("alice"), body_in)
        finally:
            logging.getLogger().removeHandler(handler)
    code = of_type(events, "RUN_ERROR")[0]["code"]
    trace_id = of_type(events, "RUN_STARTED")[0]["metadata"]["iris/traceId"]
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    (failed,) = [line for line in lines if f"failed: {code}" in line["message"]]
    assert failed["run_id"] == body_in["runId"]
    assert failed["thread_id"] == thread
    assert failed["trace_id"] == trace_id
    assert failed["code"] == code
    assert failed["level"] == "warning"
    assert failed["logger"] == "iris.runs"
    assert failed["time"].endswith("+00:00")


@pytest.mark.parametrize(("engine_name", "log_level"), [("sqlite", "info"), ("sqlite", "debug")])
async def test_the_vendor_clients_request_lines_are_logged_only_at_debug(
    settings: Settings,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
    log_level: str,
) -> None:
    settings = msgspec.structs.replace(settings, log_level=log_level)
    async with with_openai_model(settings, openai, auth) as client:
        handler, sink = captured(TextFormatter())
        try:
            openai[0].text("Hello")
            body_in = run_input(str(uuid.uuid4()), user_message("hi"), model="openai/gpt-4o")
            events = await run(client, auth("alice"), body_in)
        finally:
            logging.getLogger().removeHandler(handler)
    assert of_type(events, "RUN_FINISHED")
    vendor_lines = [line for line in sink.getvalue().splitlines() if "HTTP Request: POST" in line]
    if log_level == "debug":
        assert any(
            "/v1/chat/completions" in line and f"run_id={body_in['runId']}" in line for line in vendor_lines
        )
    else:
        assert vendor_lines == []


def test_lines_outside_a_run_have_no_run_ids_and_text_keeps_them_at_the_end() -> None:
    record = logging.LogRecord("iris", logging.ERROR, __file__, 1, "plain %s", ("line",), None)
    assert set(json.loads(JsonFormatter().format(record))) == {"time", "level", "logger", "message"}
    assert TextFormatter().format(record).endswith("ERROR   iris: plain line")
    with run_context(RunIds("r1", "t1", "ab" * 16)):
        record.code = "provider_timeout"
        text = TextFormatter().format(record)
        decoded = json.loads(JsonFormatter().format(record))
    assert text.endswith(f"plain line [run_id=r1 thread_id=t1 trace_id={'ab' * 16} code=provider_timeout]")
    assert decoded["run_id"] == "r1"
    assert decoded["code"] == "provider_timeout"


def test_an_exception_stays_in_its_json_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("iris", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    decoded = json.loads(JsonFormatter().format(record))
    assert "ValueError: boom" in decoded["exception"]


@pytest.mark.slow
@pytest.mark.parametrize("engine_name", ["sqlite"])
def test_serve_writes_every_line_as_json(settings: Settings, tmp_path: Path) -> None:
    port = free_port()
    env = {
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_LOG_FORMAT": "json",
    }
    with iris_process(env, port, tmp_path / "serve.log") as process:
        assert httpx.get(f"{process.base_url}/api/nothing-here", timeout=REQUEST_SECONDS).status_code == 404
    banner, _, logged = process.output().partition("(30 days):\n")
    lines = [json.loads(line) for line in logged.splitlines()[1:] if line.strip()]  # after the token line
    assert "Iris serving on" in banner
    assert any(
        line["logger"] == "uvicorn.access" and "/api/nothing-here" in line["message"] for line in lines
    )
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
