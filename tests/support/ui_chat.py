"""Driving ``/api/agents/{slug}/ui-chat`` with the AI SDK's own client code under Node
(``tests/uichat/ui_chat_flow.mjs``: ``DefaultChatTransport`` and ``readUIMessageStream``), one operation
per Node run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from iris.app.security.auth import Role, issue_token
from tests.conftest import JWT_SECRET
from tests.support.waits import REQUEST_SECONDS

FLOW = Path(__file__).resolve().parents[1] / "uichat" / "ui_chat_flow.mjs"


def user_token(user: str, role: Role = "user") -> str:
    return issue_token(JWT_SECRET, user, role=role)


def flow(where: Path, base: str, user: str, op: str, chat_id: str, **extra: Any) -> dict[str, Any]:
    """One operation (``send``, ``reconnect``, ``messages``) of the SDK's client against ``base``."""
    config = {
        "op": op,
        "api": f"{base}/api/agents/default/ui-chat",
        "token": user_token(user),
        "chatId": chat_id,
        **extra,
    }
    done = subprocess.run(
        ["node", FLOW.name, json.dumps(config)],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=REQUEST_SECONDS * 2,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert "thrown" not in result, result
    return result


def user_message(text: str, *files: dict[str, Any]) -> dict[str, Any]:
    """A ``UIMessage`` as ``useChat`` sends it (its id is the client's own)."""
    return {"id": "client-msg", "role": "user", "parts": [{"type": "text", "text": text}, *files]}


def types(result: dict[str, Any]) -> list[str]:
    """The chunk types the SDK parsed, in order."""
    return [chunk["type"] for chunk in result["chunks"]]


def text_of(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


def tool_part(message: dict[str, Any]) -> dict[str, Any]:
    (part,) = [p for p in message["parts"] if p["type"] == "dynamic-tool"]
    found: dict[str, Any] = part
    return found


def answered(message: dict[str, Any], approved: bool, reason: str | None = None) -> dict[str, Any]:
    """The assistant message after ``addToolApprovalResponse``: its approval-requested part answered."""
    parts = []
    for part in message["parts"]:
        if part.get("state") == "approval-requested":
            approval = {**part["approval"], "approved": approved, **({"reason": reason} if reason else {})}
            part = {**part, "state": "approval-responded", "approval": approval}
        parts.append(part)
    return {**message, "parts": parts}


def ui_chunks(body: str) -> list[dict[str, Any]]:
    """A UI message stream's chunks, its framing checked: ``data:`` frames only, ``[DONE]`` last, every
    chunk a known type, ``start`` first and ``finish`` (or one ``error``) last."""
    frames = body.split("\n\n")
    assert frames[-1] == "", body[-200:]
    assert frames[-2] == "data: [DONE]", frames[-3:]
    chunks = []
    for raw in frames[:-2]:
        if raw.startswith(":"):
            continue  # a ping
        assert raw.startswith("data: "), raw
        chunk = json.loads(raw.removeprefix("data: "))
        assert chunk["type"] in CHUNK_TYPES or chunk["type"].startswith("data-"), chunk
        chunks.append(chunk)
    assert chunks[0]["type"] == "start", chunks[0]
    assert chunks[-1]["type"] in ("finish", "error"), chunks[-1]
    return chunks


CHUNK_TYPES = {
    "start",
    "finish",
    "abort",
    "error",
    "start-step",
    "finish-step",
    *(f"{kind}-{end}" for kind in ("text", "reasoning") for end in ("start", "delta", "end")),
    *(f"tool-input-{end}" for end in ("start", "delta", "available", "error")),
    *(f"tool-output-{end}" for end in ("available", "error", "denied")),
    "tool-approval-request",
    "file",
}
