"""The AG-UI reference client (`@ag-ui/client` 1.0, under Node) through an approval interrupt and a
resume built with its own ``buildResumeArray``, then a run that reasons, and an MCP tool call whose
result is an image, live and replayed from history, and a run with a PDF and a WAV (uploaded, and
inline as ``data`` sources): no `[ag-ui]`
warning, no rejected stream."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from PIL import Image

from iris.app.asgi import create_app
from iris.app.runs.content.outputs import TOOL_OUTPUT_KEY
from iris.app.security.auth import issue_token
from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.documents import text_pdf, wav_bytes
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes
from tests.support.mcp_servers import stdio_entry
from tests.support.npm import npm_install
from tests.support.run_fixtures import Stored
from tests.support.waits import REQUEST_SECONDS, SUBPROCESS_SECONDS

FLOW = Path(__file__).with_name("agui_client_flow.cjs")
ROUND_TRIP = Path(__file__).with_name("agui_history_roundtrip.cjs")
MCP_IMAGE = Path(__file__).with_name("agui_mcp_image.cjs")
DOCUMENTS_AUDIO = Path(__file__).with_name("agui_documents_audio.cjs")


@pytest.fixture(scope="session")
def agui_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temp dir with `@ag-ui/client` (package.json); skipped (with the reason) without Node."""
    where = npm_install(tmp_path_factory, "@ag-ui/client", "@ag-ui/client")
    for script in (FLOW, ROUND_TRIP, MCP_IMAGE, DOCUMENTS_AUDIO):
        shutil.copy(script, where / script.name)
    return where


@pytest.fixture
def iris_url(settings: Settings) -> Iterator[str]:
    """Iris on a real socket whose public URL is its own (the client sends back signed image URLs)."""
    with serve_asgi(create_app(settings, environ={}), lifespan="on") as base:
        yield base


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_the_reference_client_goes_through_an_interrupt_and_a_resume(
    agui_client: Path, iris_url: str
) -> None:
    token = issue_token(JWT_SECRET, "alice")
    thread = str(uuid.uuid4())
    uploaded = httpx.post(
        f"{iris_url}/api/files",
        files={"file": ("red.png", image_bytes("PNG"), "image/png")},
        data={"threadId": thread},
        headers={"Authorization": f"Bearer {token}"},
        timeout=REQUEST_SECONDS,
    )
    assert uploaded.status_code == 201, uploaded.text
    image = uploaded.json()

    result = subprocess.run(
        [
            "node",
            FLOW.name,
            f"{iris_url}/agent/runs",
            token,
            thread,
            json.dumps(image["parts"]["agui"]),
            image["id"],
        ],
        cwd=agui_client,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "error" not in report, report
    assert [w for w in report["warnings"] if "[ag-ui]" in w] == []
    assert report["first"][0] == "RUN_STARTED"
    assert report["firstOutcome"]["type"] == "interrupt"
    assert report["interrupts"][0]["reason"] == "tool_approval"
    assert report["second"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in report["second"]
    assert report["pendingAfter"] == []
    tool_messages = [m for m in report["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["toolCallId"] == report["interrupts"][0]["toolCallId"]
    third = report["third"]
    assert third[0] == "RUN_STARTED"
    assert third[-1] == "RUN_FINISHED"
    assert third.index("REASONING_START") < third.index("REASONING_END") < third.index("TEXT_MESSAGE_START")
    assert "REASONING_ENCRYPTED_VALUE" in third
    reasoning = [m for m in report["messages"] if m["role"] == "reasoning"]
    assert reasoning[-1]["content"].startswith("Thinking (low effort)")


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_history_in_ag_ui_format_round_trips_through_the_reference_client(
    agui_client: Path, iris_url: str
) -> None:
    """A thread with an image, a server tool call and its result, read back with ``?format=ag-ui``, is
    taken by the client as it is: 0 warnings, and the timestamps stay where the client keeps them."""
    token = issue_token(JWT_SECRET, "alice")
    headers = {"Authorization": f"Bearer {token}"}
    thread = "roundtrip:" + uuid.uuid4().hex
    uploaded = httpx.post(
        f"{iris_url}/api/files",
        files={"file": ("red.png", image_bytes("PNG"), "image/png")},
        data={"threadId": thread},
        headers=headers,
        timeout=REQUEST_SECONDS,
    )
    assert uploaded.status_code == 201, uploaded.text
    for text, parts in (
        ("what is this?", [uploaded.json()["parts"]["agui"]]),
        ("use tool current_time {}", []),
    ):
        body = {
            "threadId": thread,
            "runId": str(uuid.uuid4()),
            "messages": [
                {"id": str(uuid.uuid4()), "role": "user", "content": [{"type": "text", "text": text}, *parts]}
            ],
        }
        answered = httpx.post(f"{iris_url}/agent/runs", json=body, headers=headers, timeout=REQUEST_SECONDS)
        assert answered.status_code == 200, answered.text

    result = subprocess.run(
        ["node", ROUND_TRIP.name, iris_url, token, thread],
        cwd=agui_client,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "error" not in report, report
    assert report["warnings"] == []
    assert report["events"][-1] == "RUN_FINISHED"
    kept = report["messages"][: report["historyLength"]]
    assert {m["role"] for m in kept} == {"user", "assistant", "tool"}
    assert all("iris/createdAt" in m["metadata"] for m in kept)


def assert_chart(iris_url: str, signed_url: str) -> None:
    """The signed URL serves the chart (asked of this server: the settings' public URL names no port)."""
    path = urlsplit(signed_url)
    fetched = httpx.get(f"{iris_url}{path.path}?{path.query}", timeout=30)
    assert fetched.status_code == 200
    assert fetched.headers["content-type"] == "image/png"
    with Image.open(io.BytesIO(fetched.content)) as chart:
        assert chart.size == (480, 320)


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_the_reference_client_runs_an_mcp_tool_whose_result_is_an_image(
    agui_client: Path, iris_url: str, stored: Stored, tmp_path: Path
) -> None:
    """The chart tool of a real MCP server (stdio): the client takes the live run and the history that
    replays it (the image as a stored part with a fresh URL) with 0 warnings."""
    marks = tmp_path / "marks"
    marks.mkdir()
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    entry = {**stdio_entry("charts", marks), "connectTimeoutSeconds": 60}
    assert httpx.post(f"{iris_url}/api/mcp-servers", json=entry, headers=admin).status_code == 201
    asyncio.run(stored.set_agent_tools(["mcp:charts/*"]))
    token = issue_token(JWT_SECRET, "alice")
    thread = str(uuid.uuid4())

    result = subprocess.run(
        [
            "node",
            MCP_IMAGE.name,
            iris_url,
            token,
            thread,
            "use tool charts__chart " + json.dumps({"values": [3, 1, 2]}),
            TOOL_OUTPUT_KEY,
        ],
        cwd=agui_client,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "error" not in report, report
    assert report["warnings"] == []
    assert report["live"][-1] == "RUN_FINISHED"
    assert report["live"].index("TOOL_CALL_END") < report["live"].index("TOOL_CALL_RESULT")
    output = report["toolOutput"]
    assert output["toolName"] == "charts__chart"
    assert output["status"] == "succeeded"
    (image,) = [p for p in output["content"] if p["type"] == "image"]
    assert image["mimeType"] == "image/png"
    assert_chart(iris_url, image["url"])
    # the local model saw the image the tool returned
    assert "Image 1: PNG, 480x320 pixels" in report["liveMessages"][-1]["content"]

    (tool,) = [m for m in report["history"] if m["role"] == "tool"]
    replayed = tool["metadata"]["toolAgentOutput"]["content"]
    (again,) = [p for p in replayed if p["type"] == "image"]
    assert again["uploadId"] == image["uploadId"]
    assert_chart(iris_url, again["url"])
    assert report["next"][-1] == "RUN_FINISHED"


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_the_reference_client_sends_a_document_and_audio_and_reads_them_back(
    agui_client: Path, iris_url: str
) -> None:
    """AG-UI 1.0 ``document`` and ``audio`` parts (url sources: the uploads' signed URLs) to
    ``local/multimodal``, which reads both; the history replays them as the same parts with fresh URLs,
    and the client takes the live run, the history and a run on top of it with 0 warnings."""
    token = issue_token(JWT_SECRET, "alice")
    headers = {"Authorization": f"Bearer {token}"}
    thread = str(uuid.uuid4())
    uploads = []
    for name, data, mime in (
        ("report.pdf", text_pdf(["Quarterly report\nRevenue rose.", "Costs fell."]), "application/pdf"),
        ("note.wav", wav_bytes(2.0), "audio/wav"),
    ):
        uploaded = httpx.post(
            f"{iris_url}/api/files",
            files={"file": (name, data, mime)},
            data={"threadId": thread},
            headers=headers,
            timeout=REQUEST_SECONDS,
        )
        assert uploaded.status_code == 201, uploaded.text
        uploads.append(uploaded.json())
    document, audio = (u["parts"]["agui"] for u in uploads)
    assert (document["type"], audio["type"]) == ("document", "audio")
    assert document["source"]["type"] == audio["source"]["type"] == "url"

    _documents_and_audio_round_trip(agui_client, iris_url, token, thread, document, audio)


def _documents_and_audio_round_trip(
    agui_client: Path, iris_url: str, token: str, thread: str, document: dict[str, Any], audio: dict[str, Any]
) -> None:
    """The client sends ``document`` and ``audio`` to ``local/multimodal``, reads the history back and
    runs once more on top of it: 0 warnings, both read, both replayed as url parts that fetch."""
    result = subprocess.run(
        [
            "node",
            DOCUMENTS_AUDIO.name,
            iris_url,
            token,
            thread,
            "local/multimodal",
            json.dumps(document),
            json.dumps(audio),
        ],
        cwd=agui_client,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "error" not in report, report
    assert report["warnings"] == []
    assert report["live"][0] == "RUN_STARTED"
    assert report["live"][-1] == "RUN_FINISHED"
    answer = report["liveMessages"][-1]["content"]
    assert 'Document 1 (report.pdf): PDF, 2 pages, first line: "Quarterly report".' in answer
    assert "Audio 1 (note.wav): WAV, 2.00 seconds" in answer

    user = next(m for m in report["history"] if m["role"] == "user")
    replayed = {p["type"]: p for p in user["content"] if p["type"] in {"document", "audio"}}
    assert replayed.keys() == {"document", "audio"}
    for part, sent in ((replayed["document"], document), (replayed["audio"], audio)):
        assert part["source"]["type"] == "url"
        assert part["source"]["mimeType"] == sent["source"]["mimeType"]
        assert part["metadata"]["filename"] == sent["metadata"]["filename"]
        path = urlsplit(part["source"]["value"])
        fetched = httpx.get(f"{iris_url}{path.path}?{path.query}", timeout=REQUEST_SECONDS)
        assert fetched.status_code == 200
        assert fetched.content[:4] in {b"%PDF", b"RIFF"}
    assert report["next"][-1] == "RUN_FINISHED"


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_the_reference_client_sends_a_document_and_audio_as_data(agui_client: Path, iris_url: str) -> None:
    """The same flow with the files inline (``data`` sources): Iris keeps them as uploads of the thread,
    so the history replays them as url parts and the next run (which re-sends them) goes on."""
    token = issue_token(JWT_SECRET, "alice")
    pdf = text_pdf(["Quarterly report\nRevenue rose.", "Costs fell."])
    document, audio = (
        {
            "type": kind,
            "source": {"type": "data", "value": base64.b64encode(data).decode(), "mimeType": mime},
            "metadata": {"filename": name},
        }
        for kind, name, data, mime in (
            ("document", "report.pdf", pdf, "application/pdf"),
            ("audio", "note.wav", wav_bytes(2.0), "audio/wav"),
        )
    )
    _documents_and_audio_round_trip(agui_client, iris_url, token, str(uuid.uuid4()), document, audio)
