"""Features where they meet: surface x content x tool path x engine, each cell its own test.

Surfaces: ``agui`` (``POST /agent/runs`` and ``/agent/runs/resume``), ``chat`` (the chat surface,
``POST /api/agents/default/chat``), ``llm`` (stateless ``POST /api/llm/chat``) and ``v1``
(``POST /v1/chat/completions``); and rows of a few cells each: ``key`` (``agui``, ``chat`` and ``v1``
text cells whose caller is an ``iris_sk_`` API key, :func:`test_key_cell`), ``responses``
(``POST /v1/responses``, :data:`RESPONSES_CELLS`), ``messages`` (``POST /v1/messages``, Anthropic's
Messages API, :data:`MESSAGES_CELLS`) and ``uichat`` (the AI SDK's ``POST /api/agents/default/ui-chat``,
``test_ui_chat_cell``: text, image, pdf by none, approved, declined), ``question`` (an MCP tool
that asks the user, ``charts__ask_contact``, answered accept or decline on ``agui``, ``chat`` and
``uichat``: :func:`test_question_cell`) and ``authorization`` (a call of an
OAuth-protected MCP server: signed in and resumed, or cancelled, :data:`AUTHORIZATION_CELLS`).
Contents: ``text``; an ``image``, a ``pdf`` or ``audio`` (a WAV made with :mod:`wave`) the user
sends; ``tool_image``, an image a tool returned. Tool paths: ``none``, ``approved``, ``declined``,
``failing``, ``timeout``. Engines: SQLite and PostgreSQL, one real Iris (on a socket, with the test
MCP server over stdio) per engine for the whole module; every cell on a thread and user of its own, on
the offline ``local/multimodal`` model (reads images, PDFs and audio).

Every cell asserts: no 5xx; every stream well formed (AG-UI events through the oracle and the
``ag_ui.core`` types; ``/v1`` bodies and chunks through the ``openai`` SDK's types); history replays
the cell; and then an unrelated write (an upload) and a new one-line run on another thread succeed
within a short request timeout (a wedged database answers 503, or nothing).

What the combinations mean where they differ:

- ``agui`` and ``chat`` run server tools (the MCP server ``charts``: ``wipe`` has no annotations, so
  it asks; ``broken`` fails; ``slow`` outlives the server's ``callTimeoutSeconds``; ``many_images``,
  made to ask by ``toolApproval``, returns an image). ``approved``/``declined`` end the first run with
  an approval interrupt and answer it with ``resume``. ``tool_image`` first has ``charts__chart``
  (read-only: it never asks) draw a chart in the thread; the cell's path then runs in the same thread
  (``approved``/``declined`` on ``many_images``: approving a tool that returns an image, and ``failing``
  on ``chart`` refusing an empty series). History: the thread's stored messages hold the attachment and
  the tool's stored output.
- ``llm`` is stateless and has no tools: a tool path's ``use tool ...`` is only text to the model,
  so the cell asserts no tool call and no stored message; ``tool_image`` is the client's own image of
  a chart; history replays as the client's own ``messages`` in a second request.
- ``v1`` returns tool calls to the client rather than running them (no approvals on the server):
  the client plays the path (runs the tool, declines, fails or gives up) and sends a ``tool`` message;
  ``tool_image`` is a chart image the client's tool drew, sent after the tool message as a user image.
  Requests that make tool calls are answered whole for ``approved``/``failing`` and streamed for
  ``declined``/``timeout`` (both shapes validated). History replays as the client's ``messages``.
- ``responses`` plays the client's tools the same way, answering with a ``function_call_output``
  after ``previous_response_id``; history replays from Iris's stored responses (and their
  ``input_items``); answers and every stream event validated with the ``openai`` SDK's types.

A few cells (``test_cell_across_a_restart``, SQLite, ``slow``) run their first half on one real
``python -m iris serve`` process and their answer, history and aftermath on a second one started on
the same files. Cells that meet an issue-41 defect being fixed elsewhere are strict xfails naming it
(:func:`known_defect`): they fail as soon as the fix lands, to be unmarked.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseCompletedEvent

from iris.app.asgi import create_app
from iris.app.security.auth import Role, issue_token
from iris.app.settings import Settings
from tests.conftest import ENGINES, JWT_SECRET
from tests.support.agui import check_stream
from tests.support.anthropic_types import conforming, conforming_event, sse_events
from tests.support.databases import PostgresDatabases, copy_sqlite
from tests.support.documents import text_pdf, wav_bytes
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes
from tests.support.iris_process import iris_process
from tests.support.mcp_servers import free_port, stdio_entry
from tests.support.oauth_flow import approve_now, oauth_server
from tests.support.responses_types import conforming_events, conforming_response
from tests.support.ui_chat import ui_chunks

SURFACES = ("agui", "chat", "llm", "v1")
CONTENTS = ("text", "image", "pdf", "audio", "tool_image")
PATHS = ("none", "approved", "declined", "failing", "timeout")
MODEL = "local/multimodal"
AFTERMATH_SECONDS = 15.0
"""The unrelated write and run after a cell: well within this, or the process is wedged."""
CALL_TIMEOUT = 1.0
"""The MCP server's ``callTimeoutSeconds``: ``slow`` sleeps far longer."""

PNG = image_bytes("PNG", (64, 48), (200, 30, 30))
PDF = text_pdf(["Matrix report\nEvery cell runs.", "Page two"])
WAV = wav_bytes(1.0)
FILES = {"image": ("red.png", PNG, "image/png"), "pdf": ("report.pdf", PDF, "application/pdf")}
FILES["audio"] = ("note.wav", WAV, "audio/wav")
SEEN = {"image": "64x48", "pdf": "Document 1 (report.pdf)", "audio": "Audio 1 (note.wav)"}
"""What the local model says when it really got the content."""
TOOL_PNG = image_bytes("PNG", (120, 80), (30, 90, 200))
"""The image a client's own tool drew (``llm`` and ``v1``, where Iris runs no tools)."""
ASKS = {"approved": "resolved", "declined": "cancelled"}
CLIENT_ANSWERS = {
    "approved": "wiped it",
    "declined": "The user declined this call.",
    "failing": "error: broken on purpose",
    "timeout": "error: the tool did not answer in time",
}
"""The ``tool`` message a ``v1`` client sends for each path (it runs its tools itself)."""


@dataclass
class Iris:
    """One Iris on a real socket, for the module's cells on one engine."""

    base: str
    marks: Path

    def post(self, path: str, user: str, *, timeout: float = 60.0, **kwargs: Any) -> httpx.Response:
        """POST as ``user``; never a 5xx."""
        response = httpx.post(f"{self.base}{path}", headers=bearer(user), timeout=timeout, **kwargs)
        assert response.status_code < 500, f"{path}: {response.status_code} {response.text}"
        return response

    def get(self, path: str, user: str) -> Any:
        response = httpx.get(f"{self.base}{path}", headers=bearer(user), timeout=60.0)
        assert response.status_code == 200, f"{path}: {response.status_code} {response.text}"
        return response.json()


KEYS: dict[str, str] = {}
"""The ``iris_sk_`` API key a key cell's user calls with (:func:`test_key_cell`), instead of a token."""


def bearer(user: str, role: Role = "user") -> dict[str, str]:
    if user in KEYS:
        return {"Authorization": f"Bearer {KEYS[user]}"}
    return {"Authorization": f"Bearer {issue_token(JWT_SECRET, user, role=role)}"}


# -- one Iris per engine ----------------------------------------------------------------------------


@pytest.fixture(scope="module", params=ENGINES)
def engine_name(request: pytest.FixtureRequest) -> str:
    """The engine, module-wide: one Iris per engine serves every cell."""
    name: str = request.param
    return name


@contextmanager
def database(engine_name: str, request: pytest.FixtureRequest, where: Path) -> Iterator[str]:
    """A migrated database of the engine, dropped afterwards."""
    if engine_name == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        yield copy_sqlite(template, where / "iris.db")
        return
    postgres: PostgresDatabases = request.getfixturevalue("postgres")
    name = postgres.create(template=request.getfixturevalue("postgres_template"))
    try:
        yield postgres.url_for(name)
    finally:
        postgres.drop(name)


def give_tools(base: str, marks: Path) -> None:
    """Register the test MCP server as ``charts`` (short calls; ``many_images`` made to ask) and give
    the default agent every tool of it."""
    admin = bearer("root", role="admin")
    entry = {
        **stdio_entry("charts", marks),
        "env": {"MARK_DIR": "${MARKS}"},
        "connectTimeoutSeconds": 60,
        "callTimeoutSeconds": CALL_TIMEOUT,
        "toolApproval": {"many_images": "always"},
    }
    created = httpx.post(f"{base}/api/mcp-servers", json=entry, headers=admin, timeout=60.0)
    assert created.status_code == 201, created.text
    changed = httpx.patch(
        f"{base}/api/agents/default", json={"tools": ["mcp:charts/*"]}, headers=admin, timeout=60.0
    )
    assert changed.status_code == 200, changed.text


@contextmanager
def serving(engine_name: str, request: pytest.FixtureRequest, root: Path) -> Iterator[Iris]:
    """Iris on a socket with its own database and the ``charts`` tools."""
    marks = root / "marks"
    marks.mkdir()
    with database(engine_name, request, root) as url:
        settings = Settings(data_dir=str(root / "data"), database_url=url, jwt_secret=JWT_SECRET)
        with serve_asgi(create_app(settings, environ={"MARKS": str(marks)}), lifespan="on") as base:
            give_tools(base, marks)
            yield Iris(base=base, marks=marks)


@pytest.fixture(scope="module")
def iris(
    engine_name: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Iris]:
    """The Iris of every cell on this engine (each cell has a thread and a user of its own): a cell
    whose failure left a write turn, a transaction or a connection held fails the cells after it."""
    with serving(engine_name, request, tmp_path_factory.mktemp(f"iris-{engine_name}")) as shared:
        yield shared


# -- what a cell sends ------------------------------------------------------------------------------


def instruction(content: str, path: str, marker: str) -> str:
    """The cell's words: the local model calls a tool when told ``use tool NAME {json}``."""
    if path == "none":
        return f"Tell me about this {content} ({marker})."
    if path in ASKS:
        if content == "tool_image":
            return 'use tool charts__many_images {"count": 1}'
        return f'use tool charts__wipe {{"target": "{marker}"}}'
    if path == "failing":
        if content == "tool_image":
            return 'use tool charts__chart {"values": []}'
        return "use tool charts__broken {}"
    return f'use tool charts__slow {{"seconds": 60, "marker": "{marker}"}}'


DRAW = 'use tool charts__chart {"values": [3, 1, 2]}'


def upload(iris: Iris, user: str, thread: str, content: str) -> dict[str, Any] | None:
    """The cell's file uploaded into its thread (``None`` for text and a tool's image)."""
    if content not in FILES:
        return None
    response = iris.post("/api/files", user, files={"file": FILES[content]}, data={"threadId": thread})
    assert response.status_code == 201, response.text
    uploaded: dict[str, Any] = response.json()
    return uploaded


def tool_output(events: list[dict[str, Any]]) -> dict[str, Any]:
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    output: dict[str, Any] = result["metadata"]["iris/toolAgentOutput"]
    return output


def has_image(output: dict[str, Any]) -> bool:
    return any(p.get("type") == "image" and p.get("url") for p in output.get("content") or ())


def answer(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def agui_input(thread: str, **extra: Any) -> dict[str, Any]:
    """A ``RunAgentInput`` on the multimodal local model."""
    return {
        "threadId": thread,
        "runId": str(uuid.uuid4()),
        "state": {},
        "messages": [],
        "tools": [],
        "context": [],
        "forwardedProps": {"modelId": MODEL},
        **extra,
    }


# -- the stateful surfaces: /agent/runs and the chat surface ------------------------------------------


Events = list[dict[str, Any]]


def send(iris: Iris, surface: str, user: str, thread: str, text: str, file: dict[str, Any] | None) -> Events:
    """One message on ``agui`` or ``chat``; the checked AG-UI events."""
    if surface == "agui":
        content = [{"type": "text", "text": text}, *([file["parts"]["agui"]] if file else [])]
        message = {"id": str(uuid.uuid4()), "role": "user", "content": content}
        response = iris.post("/agent/runs", user, json=agui_input(thread, messages=[message]))
    else:
        parts = [{"type": "text", "text": text}, *([file["parts"]["chat"]] if file else [])]
        body = {"sessionId": thread, "parts": parts, "modelId": MODEL}
        response = iris.post("/api/agents/default/chat", user, json=body)
    assert response.status_code == 200, response.text
    return check_stream(response.content)


def resume(
    iris: Iris, surface: str, user: str, thread: str, interrupt: str, status: str, payload: Any = None
) -> Events:
    """Answer the thread's open interrupt; the checked events of the resuming run."""
    entry = [{"interruptId": interrupt, "status": status, **({"payload": payload} if payload else {})}]
    if surface == "agui":
        response = iris.post("/agent/runs/resume", user, json=agui_input(thread, resume=entry))
    else:
        response = iris.post("/api/agents/default/chat", user, json={"sessionId": thread, "resume": entry})
    assert response.status_code == 200, response.text
    return check_stream(response.content)


def stored_history(iris: Iris, surface: str, user: str, thread: str) -> list[dict[str, Any]]:
    """The thread's messages as each surface replays them."""
    path = f"/agent/threads/{thread}/messages"
    if surface == "chat":
        path = f"/api/agents/default/sessions/{thread}/messages"
    messages: list[dict[str, Any]] = iris.get(path, user)["messages"]
    return messages


def ask(iris: Iris, surface: str, user: str, content: str, path: str) -> tuple[str, Events]:
    """The cell's message (after a chart drawn in the thread, for a tool's image) in a new thread;
    ``(thread, the events of its run)``."""
    thread = str(uuid.uuid4())
    file = upload(iris, user, thread, content)
    if content == "tool_image":
        drawn = send(iris, surface, user, thread, DRAW, None)
        assert has_image(tool_output(drawn)), tool_output(drawn)
        assert "480x320" in answer(drawn), answer(drawn)  # the model saw the tool's image
    marker = f"{surface}-{content}-{path}"
    return thread, send(iris, surface, user, thread, instruction(content, path, marker), file)


def interrupt_of(events: Events) -> str:
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt", outcome
    (interrupt,) = outcome["interrupts"]
    assert interrupt["reason"] == "tool_approval"
    interrupt_id: str = interrupt["id"]
    return interrupt_id


def stateful_cell(iris: Iris, surface: str, content: str, path: str, user: str) -> None:
    """One cell on ``agui`` or ``chat``: the message, the answer to its interrupt, what the run said
    and what history replays."""
    thread, events = ask(iris, surface, user, content, path)
    if path in ASKS:
        events = resume(iris, surface, user, thread, interrupt_of(events), ASKS[path])
    check_path(iris, events, content, path, f"{surface}-{content}-{path}")
    check_replay(stored_history(iris, surface, user, thread), content, path)


def check_path(iris: Iris, events: Events, content: str, path: str, marker: str) -> None:
    """What the run's events say for the cell's tool path."""
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert events[-1]["outcome"]["type"] == "success", events[-1]
    said = answer(events)
    if path == "none":
        assert not [e for e in events if e["type"] == "TOOL_CALL_START"]
        assert SEEN.get(content, "You said:") in said, said
        return
    output = tool_output(events)
    assert f"Tool {output['toolName']}" in said, said  # the model was told
    wiped = (iris.marks / f"wiped-{marker}").exists()
    if path == "approved":
        assert output["status"] == "succeeded", output
        assert has_image(output) if content == "tool_image" else wiped, output
    elif path == "declined":
        assert output["status"] == "cancelled", output
        assert "The user declined this call" in said, said
        assert not wiped
    elif path == "failing":
        assert output["status"] == "failed", output
        expected = "give at least one number" if content == "tool_image" else "broken on purpose"
        assert expected in output["error"], output
    else:
        assert output["status"] == "failed", output
        assert "did not answer" in output["error"] or "timed out" in output["error"], output


STATUS = {"approved": "succeeded", "declined": "cancelled", "failing": "failed", "timeout": "failed"}


def outputs_in(value: Any) -> list[dict[str, Any]]:
    """Every stored tool output (``toolAgentOutput``) in a history, oldest first."""
    if isinstance(value, list):
        return [found for item in value for found in outputs_in(item)]
    if not isinstance(value, dict):
        return []
    if "toolName" in value and "status" in value:
        return [value]
    return [found for item in value.values() for found in outputs_in(item)]


def check_replay(messages: list[dict[str, Any]], content: str, path: str) -> None:
    """History holds the cell: the user's attachment, each tool's stored output (a tool's image with
    a fresh URL), the last answer."""
    assert messages[0]["role"] == "user", messages[0]
    if content in FILES:
        assert FILES[content][0] in json.dumps(messages[0]), messages[0]
    outputs = outputs_in(messages)
    if content == "tool_image":
        assert outputs[0]["toolName"] == "charts__chart", outputs
        assert has_image(outputs[0]), outputs[0]
    if path != "none":
        assert outputs[-1]["status"] == STATUS[path], outputs[-1]
    assert messages[-1]["role"] == "assistant", messages[-1]


# -- the stateless surfaces: /api/llm/chat and /v1 ------------------------------------------------------


def llm_cell(iris: Iris, content: str, path: str, user: str) -> None:
    """One cell on ``/api/llm/chat``: no tools on this surface, nothing stored; a tool's image is the
    client's own image; history is the client's ``messages`` in a second request."""
    thread = str(uuid.uuid4())
    file = upload(iris, user, thread, content)
    if content == "tool_image":
        response = iris.post(
            "/api/files",
            user,
            files={"file": ("chart.png", TOOL_PNG, "image/png")},
            data={"threadId": thread},
        )
        assert response.status_code == 201, response.text
        file = response.json()
    text = instruction(content, path, f"llm-{content}-{path}")
    parts = [{"type": "text", "text": text}, *([file["parts"]["chat"]] if file else [])]
    events = llm(iris, user, {"modelId": MODEL, "parts": parts})
    said = answer(events)
    assert not [e for e in events if e["type"].startswith("TOOL_CALL")]  # a tool path is only words here
    assert {**SEEN, "tool_image": "120x80"}.get(content, f"You said: {text}") in said, said
    earlier = [{"role": "user", "content": parts}, {"role": "assistant", "content": said}]
    again = llm(iris, user, {"modelId": MODEL, "messages": earlier, "content": "And again?"})
    assert "You said: And again?" in answer(again)
    assert iris.get("/api/agents/default/sessions", user)["sessions"] == []  # nothing stored


def llm(iris: Iris, user: str, body: dict[str, Any]) -> Events:
    response = iris.post("/api/llm/chat", user, json=body)
    assert response.status_code == 200, response.text
    events = check_stream(response.content)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    return events


CLIENT_TOOLS = ("charts__wipe", "charts__broken", "charts__slow", "charts__many_images", "charts__chart")
"""The test MCP server's tools, offered to the ``/v1`` rows as the client's own."""
V1_TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": {"type": "object"}},
    }
    for name in CLIENT_TOOLS
]


def v1_user(content: str, text: str) -> dict[str, Any]:
    """The cell's user message in OpenAI's shape (an image as a data URL, a PDF as a ``file`` part,
    audio as ``input_audio``)."""
    if content not in FILES:
        return {"role": "user", "content": text}
    data = base64.b64encode(FILES[content][1]).decode()
    parts: dict[str, dict[str, Any]] = {
        "image": {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        "pdf": {
            "type": "file",
            "file": {"file_data": f"data:application/pdf;base64,{data}", "filename": "report.pdf"},
        },
        "audio": {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}},
    }
    return {"role": "user", "content": [{"type": "text", "text": text}, parts[content]]}


def complete(iris: Iris, user: str, messages: list[dict[str, Any]], *, stream: bool) -> dict[str, Any]:
    """One ``/v1`` request, every body or chunk validated with the ``openai`` SDK's types; the
    answer's message (``content`` and ``tool_calls``) assembled from chunks when streamed."""
    body = {"model": MODEL, "messages": messages, "tools": V1_TOOLS, "stream": stream}
    response = iris.post("/v1/chat/completions", user, json=body)
    assert response.status_code == 200, response.text
    if not stream:
        completion = ChatCompletion.model_validate(response.json())
        message: dict[str, Any] = completion.choices[0].message.model_dump(exclude_none=True)
        return message
    content, calls = "", dict[int, dict[str, Any]]()
    assert response.headers["content-type"].startswith("text/event-stream")
    lines = [line for line in response.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]", lines[-1:]
    for line in lines[:-1]:
        chunk = ChatCompletionChunk.model_validate_json(line.removeprefix("data: "))
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or ():
                held = calls.setdefault(call.index, {"type": "function", "function": {"arguments": ""}})
                held["id"] = call.id or held.get("id")
                if call.function is not None:
                    held["function"]["name"] = call.function.name or held["function"].get("name")
                    held["function"]["arguments"] += call.function.arguments or ""
    return {
        "role": "assistant",
        "content": content,
        **({"tool_calls": list(calls.values())} if calls else {}),
    }


def v1_cell(iris: Iris, content: str, path: str, user: str) -> None:
    """One cell on ``/v1``: the client runs the tools (see the module docstring); history is the
    client's ``messages`` again."""
    messages: list[dict[str, Any]] = []
    if content == "tool_image":
        messages = [{"role": "user", "content": DRAW}]
        drawn = complete(iris, user, messages, stream=True)
        (call,) = drawn["tool_calls"]
        image = f"data:image/png;base64,{base64.b64encode(TOOL_PNG).decode()}"
        shown = [{"type": "text", "text": "The chart:"}, {"type": "image_url", "image_url": {"url": image}}]
        messages += [drawn, {"role": "tool", "tool_call_id": call["id"], "content": "a chart"}]
        messages.append({"role": "user", "content": shown})
        seen = complete(iris, user, messages, stream=True)
        assert "120x80" in seen["content"], seen
        messages.append(seen)
    text = instruction(content, path, f"v1-{content}-{path}")
    messages.append(v1_user(content, text))
    reply = complete(iris, user, messages, stream=path not in ("approved", "failing"))
    if path == "none":
        assert "tool_calls" not in reply
        expected = SEEN.get(content, f"You said: {text}").replace("note.wav", "audio.wav")  # v1: no name
        assert expected in reply["content"], reply
    else:
        (call,) = reply["tool_calls"]
        assert call["type"] == "function", call
        assert call["function"]["name"] in text, call
        messages += [reply, {"role": "tool", "tool_call_id": call["id"], "content": CLIENT_ANSWERS[path]}]
        reply = complete(iris, user, messages, stream=True)
        assert f"Tool {call['function']['name']} returned: {CLIENT_ANSWERS[path]}" in reply["content"], reply
    messages += [reply, {"role": "user", "content": "And again?"}]
    again = complete(iris, user, messages, stream=False)
    assert "You said: And again?" in again["content"], again


RESPONSES_CELLS = [
    ("text", "none"),
    ("image", "none"),
    ("pdf", "none"),
    ("text", "approved"),
    ("text", "declined"),
]
"""The ``responses`` row's cells (content, path): the contents it reads, and the client's tool path."""
RESPONSES_TOOLS = [
    {"type": "function", "name": name, "parameters": {"type": "object"}, "strict": False}
    for name in CLIENT_TOOLS
]
MESSAGES_TOOLS = [{"name": name, "input_schema": {"type": "object"}} for name in CLIENT_TOOLS]


def responses_user(content: str, text: str) -> dict[str, Any]:
    """The cell's user message as a Responses ``input`` item (``input_image``, ``input_file``)."""
    if content not in FILES:
        return {"role": "user", "content": text}
    data = base64.b64encode(FILES[content][1]).decode()
    parts: dict[str, dict[str, Any]] = {
        "image": {"type": "input_image", "image_url": f"data:image/png;base64,{data}", "detail": "auto"},
        "pdf": {
            "type": "input_file",
            "file_data": f"data:application/pdf;base64,{data}",
            "filename": "report.pdf",
        },
    }
    return {"role": "user", "content": [{"type": "input_text", "text": text}, parts[content]]}


def respond(iris: Iris, user: str, body: dict[str, Any], *, stream: bool) -> Response:
    """One ``/v1/responses`` request; the answer, or every stream event, validated by the SDK's types."""
    response = iris.post(
        "/v1/responses", user, json={"model": MODEL, "tools": RESPONSES_TOOLS, **body, "stream": stream}
    )
    assert response.status_code == 200, response.text
    if not stream:
        return conforming_response(response.json())
    last = conforming_events(response.text)[-1]
    assert isinstance(last, ResponseCompletedEvent), last
    return last.response


def responses_cell(iris: Iris, content: str, path: str, user: str) -> None:
    """One cell on ``/v1/responses``: the client answers a tool call after ``previous_response_id``;
    history is Iris's stored conversation, continued once more."""
    text = instruction(content, path, f"responses-{content}-{path}")
    reply = respond(iris, user, {"input": [responses_user(content, text)]}, stream=path != "approved")
    if path == "none":
        assert SEEN.get(content, f"You said: {text}") in reply.output_text, reply
    else:
        (call,) = [item for item in reply.output if item.type == "function_call"]
        assert call.name in text, call
        output = {"type": "function_call_output", "call_id": call.call_id, "output": CLIENT_ANSWERS[path]}
        reply = respond(iris, user, {"previous_response_id": reply.id, "input": [output]}, stream=True)
        assert f"Tool {call.name} returned: {CLIENT_ANSWERS[path]}" in reply.output_text, reply
    again = respond(iris, user, {"previous_response_id": reply.id, "input": "And again?"}, stream=False)
    assert "You said: And again?" in again.output_text, again
    assert (
        iris.get(f"/v1/responses/{again.id}/input_items", user)["data"][0]["content"][0]["text"]
        == "And again?"
    )


def messages_user(content: str, text: str) -> dict[str, Any]:
    """The cell's user turn in Anthropic's shape (an image or a PDF as base64 blocks)."""
    if content not in ("image", "pdf"):
        return {"role": "user", "content": text}
    data = base64.b64encode(FILES[content][1]).decode()
    kind, media = ("image", "image/png") if content == "image" else ("document", "application/pdf")
    block = {"type": kind, "source": {"type": "base64", "media_type": media, "data": data}}
    if content == "pdf":
        block["title"] = "report.pdf"
    return {"role": "user", "content": [{"type": "text", "text": text}, block]}


def create(iris: Iris, user: str, messages: list[dict[str, Any]], *, stream: bool) -> dict[str, Any]:
    """One ``/v1/messages`` request (the key as ``x-api-key``), the answer or every stream event
    validated with the ``anthropic`` SDK's types; the answer as an assistant turn to send back."""
    body = {
        "model": MODEL,
        "max_tokens": 512,
        "messages": messages,
        "tools": MESSAGES_TOOLS,
        "stream": stream,
    }
    headers = {"x-api-key": issue_token(JWT_SECRET, user), "anthropic-version": "2023-06-01"}
    response = httpx.post(f"{iris.base}/v1/messages", json=body, headers=headers, timeout=60.0)
    assert response.status_code == 200, response.text
    if not stream:
        return {"role": "assistant", "content": conforming(Message, response.json()).model_dump()["content"]}
    blocks: list[dict[str, Any]] = []
    for name, data in sse_events(response.text):
        event = conforming_event(name, data) if name != "ping" else None
        if event is not None and event.type == "content_block_start":
            blocks.append(event.content_block.model_dump(exclude_none=True))
        elif event is not None and event.type == "content_block_delta":
            block, delta = blocks[event.index], event.delta
            if delta.type == "text_delta":
                block["text"] += delta.text
            elif delta.type == "input_json_delta":
                block["json"] = block.get("json", "") + delta.partial_json
    for block in blocks:
        if "json" in block:
            block["input"] = json.loads(block.pop("json") or "{}")
    return {"role": "assistant", "content": blocks}


def said_by(turn: dict[str, Any]) -> str:
    return "".join(b.get("text") or "" for b in turn["content"] if b["type"] == "text")


def messages_cell(iris: Iris, content: str, path: str, user: str) -> None:
    """One cell on ``/v1/messages``: the client runs the tools and sends a ``tool_result`` (a tool's
    image inside it); history is the client's ``messages`` again."""
    text = instruction(content, path, f"messages-{content}-{path}")
    messages = [messages_user(content, text)]
    reply = create(iris, user, messages, stream=path != "approved")
    if content == "tool_image":  # the client's own tool drew a chart: its result carries the image
        (use,) = [
            b
            for b in create(iris, user, [messages_user("text", DRAW)], stream=True)["content"]
            if b["type"] == "tool_use"
        ]
        chart = {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(TOOL_PNG).decode(),
            },
        }
        result = {
            "type": "tool_result",
            "tool_use_id": use["id"],
            "content": [{"type": "text", "text": "a chart"}, chart],
        }
        messages = [
            messages_user("text", DRAW),
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
        reply = create(iris, user, messages, stream=True)
        assert "120x80" in said_by(reply), reply
    elif path == "none":
        assert [b["type"] for b in reply["content"]] == ["text"], reply
        assert SEEN.get(content, f"You said: {text}") in said_by(reply), reply
    else:
        (use,) = [b for b in reply["content"] if b["type"] == "tool_use"]
        assert use["name"] in text, use
        result = {"type": "tool_result", "tool_use_id": use["id"], "content": CLIENT_ANSWERS[path]}
        messages += [reply, {"role": "user", "content": [result]}]
        reply = create(iris, user, messages, stream=True)
        assert f"Tool {use['name']} returned: {CLIENT_ANSWERS[path]}" in said_by(reply), reply
    messages += [reply, {"role": "user", "content": "And again?"}]
    assert "You said: And again?" in said_by(create(iris, user, messages, stream=False))


# -- after every cell ---------------------------------------------------------------------------------


def still_writes(iris: Iris, user: str) -> None:
    """An unrelated upload and a one-line run on another thread, each well within a short timeout."""
    other = str(uuid.uuid4())
    uploaded = iris.post(
        "/api/files",
        user,
        timeout=AFTERMATH_SECONDS,
        files={"file": ("after.png", PNG, "image/png")},
        data={"threadId": other},
    )
    assert uploaded.status_code == 201, uploaded.text
    message = {"id": str(uuid.uuid4()), "role": "user", "content": "ping"}
    ran = iris.post(
        "/agent/runs", user, timeout=AFTERMATH_SECONDS, json=agui_input(other, messages=[message])
    )
    assert ran.status_code == 200, ran.text
    events = check_stream(ran.content)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert "You said: ping" in answer(events)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("content", CONTENTS)
@pytest.mark.parametrize("surface", SURFACES)
def test_cell(iris: Iris, engine_name: str, surface: str, content: str, path: str) -> None:
    """One cell (see the module docstring), then an unrelated write and run."""
    user = f"m-{engine_name}-{surface}-{content}-{path}"
    if surface in ("agui", "chat"):
        stateful_cell(iris, surface, content, path, user)
    elif surface == "llm":
        llm_cell(iris, content, path, user)
    else:
        v1_cell(iris, content, path, user)
    still_writes(iris, f"{user}-after")


@pytest.mark.parametrize(
    ("surface", "path"), [("agui", "none"), ("agui", "approved"), ("chat", "none"), ("v1", "none")]
)
def test_key_cell(iris: Iris, engine_name: str, surface: str, path: str) -> None:
    """A text cell whose caller is an ``iris_sk_`` API key (made by its user with a token) rather than a
    token: every request of the cell, its history and its aftermath carry the key."""
    user = f"m-{engine_name}-key-{surface}-{path}"
    made = iris.post("/api/keys", user, json={"name": "matrix"})
    assert made.status_code == 201, made.text
    KEYS[user] = KEYS[f"{user}-after"] = made.json()["key"]
    if surface == "v1":
        v1_cell(iris, "text", path, user)
    else:
        stateful_cell(iris, surface, "text", path, user)
    still_writes(iris, f"{user}-after")
    (key,) = iris.get("/api/keys", user)["keys"]
    assert key["lastUsedAt"] is not None  # the cell really came with the key


@pytest.mark.parametrize(("content", "path"), RESPONSES_CELLS)
def test_responses_cell(iris: Iris, engine_name: str, content: str, path: str) -> None:
    """One ``responses`` cell (see the module docstring), then an unrelated write and run."""
    user = f"m-{engine_name}-responses-{content}-{path}"
    responses_cell(iris, content, path, user)
    still_writes(iris, f"{user}-after")


MESSAGES_CELLS = [
    ("text", "none"),
    ("image", "none"),
    ("pdf", "none"),
    ("text", "approved"),
    ("tool_image", "none"),
]
"""``/v1/messages`` (Anthropic's Messages API) is a row of its own on the same core as ``v1``: the
contents it takes and the client's tool path, with a tool's image inside a ``tool_result``."""


@pytest.mark.parametrize(("content", "path"), MESSAGES_CELLS)
def test_messages_cell(iris: Iris, engine_name: str, content: str, path: str) -> None:
    """One ``/v1/messages`` cell, then an unrelated write and run."""
    user = f"m-{engine_name}-messages-{content}-{path}"
    messages_cell(iris, content, path, user)
    still_writes(iris, f"{user}-after")


# -- the AI SDK's surface: a row of its own, few cells ----------------------------------------------------


def ui_post(iris: Iris, user: str, chat: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    """One ``useChat`` request; its checked chunks."""
    body = {"id": chat, "messages": [message], "modelId": MODEL}
    response = iris.post("/api/agents/default/ui-chat", user, json=body)
    assert response.status_code == 200, response.text
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    return ui_chunks(response.text)


@pytest.mark.parametrize("path", ["none", "approved", "declined"])
@pytest.mark.parametrize("content", ["text", "image", "pdf"])
def test_ui_chat_cell(iris: Iris, engine_name: str, content: str, path: str) -> None:
    """The cell on ``/ui-chat``: the file by its signed upload URL, an approval answered in the tool
    part, the answer's chunks and the ``UIMessage`` history; then an unrelated write and run."""
    user, chat, marker = (
        f"m-{engine_name}-uichat-{content}-{path}",
        str(uuid.uuid4()),
        f"uichat-{content}-{path}",
    )
    file = upload(iris, user, chat, content)
    parts: list[dict[str, Any]] = [{"type": "text", "text": instruction(content, path, marker)}]
    if file is not None:
        shown = file["parts"]["chat"]
        url = shown.get("image") or shown.get("document")
        parts.append(
            {"type": "file", "mediaType": FILES[content][2], "url": url, "filename": FILES[content][0]}
        )
    chunks = ui_post(iris, user, chat, {"id": "m1", "role": "user", "parts": parts})
    if path in ASKS:
        (asked,) = [c for c in chunks if c["type"] == "tool-approval-request"]
        approval = {"id": asked["approvalId"], "approved": path == "approved"}
        tool = {"type": "dynamic-tool", "toolName": "charts__wipe", "toolCallId": asked["toolCallId"]}
        answered = {**tool, "state": "approval-responded", "input": {}, "approval": approval}
        message = {"id": chunks[0]["messageId"], "role": "assistant", "parts": [answered]}
        chunks = ui_post(iris, user, chat, message)
    said = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    kinds = [c["type"] for c in chunks]
    assert kinds[-1] == "finish", kinds
    wiped = (iris.marks / f"wiped-{marker}").exists()
    if path == "none":
        assert SEEN.get(content, "You said:") in said, said
    elif path == "approved":
        assert "tool-output-available" in kinds, kinds
        assert wiped
    else:
        assert "tool-output-denied" in kinds, kinds
        assert "The user declined this call" in said, said
        assert not wiped
    history = iris.get(f"/api/agents/default/ui-chat/{chat}/messages", user)
    assert [m["role"] for m in history] == ["user", "assistant"]
    if file is not None:
        assert FILES[content][0] in json.dumps(history[0])
    if path in ASKS:
        (call,) = [p for p in history[1]["parts"] if p["type"] == "dynamic-tool"]
        assert call["state"] == ("output-available" if path == "approved" else "output-denied"), call
    still_writes(iris, f"{user}-after")


# -- a tool's question (MCP elicitation): a row of its own on each surface that resumes ---------------------

QUESTION = "use tool charts__ask_contact {}"
ANSWERS = {"accept": {"action": "accept", "content": {"name": "Ada"}}, "decline": {"action": "decline"}}
TOLD = {"accept": "sending to Ada (subscribe: False)", "decline": "the user chose decline"}
"""What ``ask_contact`` answers once the user accepted the form (with a name) or declined it."""


def question(interrupts: list[dict[str, Any]]) -> dict[str, Any]:
    """The one open interrupt: the MCP tool's question, with its form."""
    (asked,) = interrupts
    assert (asked["reason"], asked["message"]) == ("input_required", "Who should the report go to?")
    assert asked["responseSchema"]["required"] == ["name"], asked
    return asked


def ui_question_cell(iris: Iris, user: str, chat: str, given: str) -> None:
    """On ``/ui-chat``: the question is a ``data-interrupt`` part; its ``data.response`` answers it."""
    chunks = ui_post(
        iris, user, chat, {"id": "m1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}
    )
    (part,) = [c for c in chunks if c["type"] == "data-interrupt"]
    asked = question([part["data"]])
    response = {"status": "resolved", "payload": ANSWERS[given]}
    answered = {"type": "data-interrupt", "id": asked["id"], "data": {**asked, "response": response}}
    chunks = ui_post(
        iris, user, chat, {"id": chunks[0]["messageId"], "role": "assistant", "parts": [answered]}
    )
    assert [c["type"] for c in chunks][-1] == "finish", chunks
    assert TOLD[given] in json.dumps(chunks), chunks
    history = iris.get(f"/api/agents/default/ui-chat/{chat}/messages", user)
    assert TOLD[given] in json.dumps(history), history


@pytest.mark.parametrize("given", ["accept", "decline"])
@pytest.mark.parametrize("surface", ["agui", "chat", "uichat"])
def test_question_cell(iris: Iris, engine_name: str, surface: str, given: str) -> None:
    """An MCP tool asks the user mid-call (a form); the run ends with an ``input_required`` interrupt,
    the answer (accept with the form, or decline) resumes the waiting call, the server's answer is what
    the run and history say; then an unrelated write and run."""
    user, thread = f"m-{engine_name}-question-{surface}-{given}", str(uuid.uuid4())
    if surface == "uichat":
        ui_question_cell(iris, user, thread, given)
    else:
        events = send(iris, surface, user, thread, QUESTION, None)
        assert events[-1]["outcome"]["type"] == "interrupt", events[-1]
        asked = question(events[-1]["outcome"]["interrupts"])
        events = resume(iris, surface, user, thread, asked["id"], "resolved", ANSWERS[given])
        assert events[-1]["outcome"]["type"] == "success", events[-1]
        output = tool_output(events)
        assert (output["status"], output["content"]) == ("succeeded", [{"type": "text", "text": TOLD[given]}])
        outputs = outputs_in(stored_history(iris, surface, user, thread))
        assert outputs[-1]["content"] == output["content"], outputs


# -- authorization: a server each user signs in to ----------------------------------------------------

AUTHORIZATION_CELLS = [
    ("agui", "signed_in"),
    ("chat", "signed_in"),
    ("uichat", "signed_in"),
    ("agui", "cancelled"),
]
"""The ``authorization`` row: a call of the OAuth-protected ``secure`` server ends the run with an
``authorization_required`` interrupt; the user signs in (browser-free) and resumes, or cancels."""


@pytest.fixture(scope="module")
def secured(iris: Iris, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The OAuth-protected test server as ``secure``, given to the default agent, its tools listed once
    by a first user's sign-in; its marks directory (``issued`` holds every token it gave)."""
    marks = tmp_path_factory.mktemp("secure-marks")
    admin = bearer("root", role="admin")
    with oauth_server(marks) as url:
        entry = {"name": "secure", "transport": "http", "url": url, "approval": "never", "oauth": {}}
        created = httpx.post(f"{iris.base}/api/mcp-servers", json=entry, headers=admin, timeout=60.0)
        assert created.status_code == 201, created.text
        tools = {"tools": ["mcp:charts/*", "mcp:secure/*"]}
        changed = httpx.patch(f"{iris.base}/api/agents/default", json=tools, headers=admin, timeout=60.0)
        assert changed.status_code == 200, changed.text
        signed_in(iris, "agui", "m-secure-primer", "use tool secure__sign_in {}", "resolved")
        yield marks


def signed_in(iris: Iris, surface: str, user: str, text: str, status: str) -> tuple[str, Events]:
    """A call that asks ``user`` to sign in; signed in when ``status`` is ``resolved``, then resumed
    with it: ``(thread, the resuming run's events)``."""
    thread = str(uuid.uuid4())
    outcome = send(iris, surface, user, thread, text, None)[-1]["outcome"]
    assert outcome["type"] == "interrupt", outcome
    (interrupt,) = outcome["interrupts"]
    assert interrupt["reason"] == "authorization_required", interrupt
    if status == "resolved":
        back = approve_now(interrupt["metadata"]["iris/authorization"]["url"], user)
        page = httpx.get(f"{iris.base}{back}", timeout=60.0)
        assert page.status_code == 200, page.text
    return thread, resume(iris, surface, user, thread, interrupt["id"], status)


def ui_authorization_cell(iris: Iris, secured: Path, user: str) -> None:
    """On ``/ui-chat``: the sign-in is a ``data-interrupt`` part; signed in, its ``data.response``
    resumes the call, which runs as the user; history holds no token."""
    chat = str(uuid.uuid4())
    text = {"type": "text", "text": "use tool secure__whoami {}"}
    chunks = ui_post(iris, user, chat, {"id": "m1", "role": "user", "parts": [text]})
    (part,) = [c for c in chunks if c["type"] == "data-interrupt"]
    asked = part["data"]
    assert asked["reason"] == "authorization_required", asked
    back = approve_now(asked["metadata"]["iris/authorization"]["url"], user)
    assert httpx.get(f"{iris.base}{back}", timeout=60.0).status_code == 200
    answered = {
        "type": "data-interrupt",
        "id": asked["id"],
        "data": {**asked, "response": {"status": "resolved"}},
    }
    chunks = ui_post(
        iris, user, chat, {"id": chunks[0]["messageId"], "role": "assistant", "parts": [answered]}
    )
    assert [c["type"] for c in chunks][-1] == "finish", chunks
    assert f"user={user}" in json.dumps(chunks), chunks
    history = json.dumps(iris.get(f"/api/agents/default/ui-chat/{chat}/messages", user))
    assert f"user={user}" in history
    assert not any(token in history for token in (secured / "issued").read_text().split())


@pytest.mark.parametrize(("surface", "path"), AUTHORIZATION_CELLS)
def test_authorization_cell(iris: Iris, secured: Path, engine_name: str, surface: str, path: str) -> None:
    """The cell: sign in and resume (the call runs as the user), or cancel (the call fails, the model is
    told); history replays it and holds no token; then an unrelated write and run."""
    user = f"m-{engine_name}-auth-{surface}-{path}"
    if surface == "uichat":
        ui_authorization_cell(iris, secured, user)
        still_writes(iris, f"{user}-after")
        return
    status = "resolved" if path == "signed_in" else "cancelled"
    thread, events = signed_in(iris, surface, user, "use tool secure__whoami {}", status)
    assert events[-1]["outcome"]["type"] == "success", events[-1]
    output = tool_output(events)
    assert f"Tool {output['toolName']}" in answer(events)
    if path == "signed_in":
        assert output["status"] == "succeeded", output
        assert f"user={user}" in json.dumps(output)
    else:
        assert output["status"] == "failed", output
        assert "cancelled the sign-in" in output["error"], output
    history = json.dumps(stored_history(iris, surface, user, thread))
    assert "secure__whoami" in history
    assert not any(token in history for token in (secured / "issued").read_text().split())
    still_writes(iris, f"{user}-after")


# -- cells across a process restart -------------------------------------------------------------------

RESTARTS = [("agui", "image", "approved"), ("chat", "pdf", "declined"), ("agui", "tool_image", "none")]
"""Cells whose process is restarted between the question and its answer (or, with no question,
before history replays the run): SQLite only, a real ``python -m iris serve`` on each side, shared by
these cells (two process starts in all)."""


@dataclass
class Restarted:
    """The second process, and what each restart cell did on the first: ``{cell: (thread, events)}``."""

    iris: Iris
    asked: dict[tuple[str, str, str], tuple[str, Events]]


def restart_user(cell: tuple[str, str, str]) -> str:
    return "restart-" + "-".join(cell)


@pytest.fixture(scope="module")
def restarted(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Restarted]:
    """Every restart cell's first half on one process, then a second process on the same files."""
    root = tmp_path_factory.mktemp("restart")
    marks = root / "marks"
    marks.mkdir()
    port = free_port()
    with database("sqlite", request, root) as url:
        env = {
            "IRIS_DATA_DIR": str(root / "data"),
            "IRIS_DATABASE_URL": url,
            "IRIS_JWT_SECRET": JWT_SECRET,
            "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "MARKS": str(marks),
        }
        with iris_process(env, port, root / "first.log") as first:
            give_tools(first.base_url, marks)
            before = Iris(first.base_url, marks)
            asked = {cell: ask(before, cell[0], restart_user(cell), cell[1], cell[2]) for cell in RESTARTS}
        with iris_process(env, port, root / "second.log") as second:
            yield Restarted(Iris(second.base_url, marks), asked)


@pytest.mark.slow
@pytest.mark.parametrize(("surface", "content", "path"), RESTARTS)
def test_cell_across_a_restart(restarted: Restarted, surface: str, content: str, path: str) -> None:
    """The cell's question was asked before the restart; its answer, history and the next write and
    run come from the new process."""
    iris, user = restarted.iris, restart_user((surface, content, path))
    thread, events = restarted.asked[surface, content, path]
    if path in ASKS:
        events = resume(iris, surface, user, thread, interrupt_of(events), ASKS[path])
    check_path(iris, events, content, path, f"{surface}-{content}-{path}")
    check_replay(stored_history(iris, surface, user, thread), content, path)
    still_writes(iris, f"{user}-after")
