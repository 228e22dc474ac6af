"""``useChat``'s protocol end to end: the AI SDK's ``DefaultChatTransport`` and ``readUIMessageStream``
under Node against Iris on a socket (every chunk parsed by the SDK's own schema), on the offline
multimodal model: text with reasoning, an image, a PDF and audio as ``data:`` URLs and an uploaded image
by its signed URL, a server tool returning an image, a server tool reporting progress, an approval
approved and denied, a tool's question answered in its data part, a regeneration, history as
``UIMessage[]`` (validated by the SDK) and resume with nothing running (204)."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.documents import text_pdf, wav_bytes
from tests.support.images import image_bytes
from tests.support.ui_chat import answered, flow, text_of, tool_part, types, user_message, user_token

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

MODEL = {"modelId": "local/multimodal"}
PNG = image_bytes("PNG", (64, 48), (200, 30, 30))
FILES = {
    "image": ("image/png", PNG, "64x48"),
    "pdf": ("application/pdf", text_pdf(["Report\nEvery cell runs."]), "Document 1 (report.pdf)"),
    "audio": ("audio/wav", wav_bytes(1.0), "Audio 1 (note.wav)"),
}
NAMES = {"image": "red.png", "pdf": "report.pdf", "audio": "note.wav"}


def data_part(kind: str) -> dict[str, str]:
    media_type, data, _ = FILES[kind]
    url = f"data:{media_type};base64,{base64.b64encode(data).decode()}"
    return {"type": "file", "mediaType": media_type, "url": url, "filename": NAMES[kind]}


def fetched(iris: str, url: str) -> bytes:
    """A signed URL's bytes, from this Iris (the settings' public URL names another port)."""
    parts = urlsplit(url)
    response = httpx.get(f"{iris}{parts.path}?{parts.query}", timeout=30)
    assert response.status_code == 200, response.text
    return response.content


def test_text_with_reasoning_streams_every_chunk_and_history_replays(ai: Path, iris: str) -> None:
    chat = f"chat-{uuid.uuid4().hex}"
    body = {**MODEL, "enableThinking": True}
    sent = flow(ai, iris, "ann", "send", chat, messages=[user_message("hello")], body=body)
    assert sent["errors"] == []
    seen = types(sent)
    assert seen[:3] == ["start", "data-model", "start-step"]
    assert seen[-2:] == ["finish-step", "finish"]
    for kind in (
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-end",
    ):
        assert kind in seen, seen
    message = sent["message"]
    assert message["id"] == sent["chunks"][0]["messageId"]
    assert "You said: hello" in text_of(message)
    assert [p["type"] for p in message["parts"]] == [
        "data-model",
        "step-start",
        "reasoning",
        "text",
        "data-usage",
    ]
    finish = sent["chunks"][-1]
    assert finish["finishReason"] == "stop"
    assert finish["messageMetadata"]["usage"][0]["outputTokens"] > 0
    assert message["metadata"] == finish["messageMetadata"]

    history = flow(ai, iris, "ann", "messages", chat)
    assert history["status"] == 200
    user, answer = history["messages"]
    assert (user["role"], user["parts"]) == ("user", [{"type": "text", "text": "hello"}])
    assert answer["id"] == message["id"]  # the answer keeps its stream's id
    assert [p["type"] for p in answer["parts"]] == ["step-start", "reasoning", "text"]
    assert flow(ai, iris, "ann", "reconnect", chat) == {"none": True}  # 204: nothing runs


@pytest.mark.parametrize("kind", ["image", "pdf", "audio"])
def test_a_file_as_a_data_url_is_stored_as_an_upload_of_the_chat(ai: Path, iris: str, kind: str) -> None:
    chat = f"chat-{uuid.uuid4().hex}"
    message = user_message(f"What is this {kind}?", data_part(kind))
    sent = flow(ai, iris, "bea", "send", chat, messages=[message], body=MODEL)
    assert sent["errors"] == []
    assert FILES[kind][2] in text_of(sent["message"])  # the model really got it

    (user, _) = flow(ai, iris, "bea", "messages", chat)["messages"]
    (file,) = [p for p in user["parts"] if p["type"] == "file"]
    assert (file["mediaType"], file["filename"]) == (FILES[kind][0], NAMES[kind])
    assert f"/{chat}/uploads/" in file["url"]
    assert "token=" in file["url"]
    assert fetched(iris, file["url"]).startswith(FILES[kind][1][:8])


def test_an_uploaded_image_is_sent_by_its_signed_url(ai: Path, iris: str) -> None:
    chat = f"chat-{uuid.uuid4().hex}"
    headers = {"Authorization": f"Bearer {user_token('cy')}"}
    uploaded = httpx.post(
        f"{iris}/api/files",
        headers=headers,
        files={"file": ("red.png", PNG, "image/png")},
        data={"threadId": chat},
    )
    assert uploaded.status_code == 201, uploaded.text
    url = uploaded.json()["parts"]["chat"]["image"]
    part = {"type": "file", "mediaType": "image/png", "url": url, "filename": "red.png"}
    sent = flow(ai, iris, "cy", "send", chat, messages=[user_message("And this?", part)], body=MODEL)
    assert "64x48" in text_of(sent["message"])


def test_a_server_tool_streams_its_call_output_and_image(ai: Path, iris: str) -> None:
    chat = f"chat-{uuid.uuid4().hex}"
    ask = user_message('use tool charts__chart {"values": [3, 1, 2]}')
    sent = flow(ai, iris, "dee", "send", chat, messages=[ask], body=MODEL)
    assert sent["errors"] == []
    seen = types(sent)
    for kind in (
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-output-available",
        "file",
    ):
        assert kind in seen, seen
    assert seen.count("start-step") == 2  # the call, then the answer after its output
    part = tool_part(sent["message"])
    assert (part["toolName"], part["state"], part["input"]) == (
        "charts__chart",
        "output-available",
        {"values": [3, 1, 2]},
    )
    assert part["output"]["status"] == "succeeded"
    (image,) = [p for p in sent["message"]["parts"] if p["type"] == "file"]
    assert image["mediaType"] == "image/png"
    assert fetched(iris, image["url"]).startswith(b"\x89PNG")
    assert "480x320" in text_of(sent["message"])

    (_, answer) = flow(ai, iris, "dee", "messages", chat)["messages"]
    replayed = tool_part(answer)
    assert (replayed["state"], replayed["toolCallId"]) == ("output-available", part["toolCallId"])
    assert [p["type"] for p in answer["parts"]].count("file") == 1


def test_a_tools_progress_is_one_data_part_updated_in_place(ai: Path, iris: str) -> None:
    chat = f"chat-{uuid.uuid4().hex}"
    ask = user_message('use tool charts__count {"steps": 3, "pause": 0.4}')
    sent = flow(ai, iris, "ida", "send", chat, messages=[ask], body=MODEL)
    assert sent["errors"] == []
    seen = types(sent)
    updates = [c for c in sent["chunks"] if c["type"] == "data-tool-progress"]
    assert len(updates) >= 2, seen  # the pauses are longer than the least time between two updates
    call = tool_part(sent["message"])["toolCallId"]
    assert {c["id"] for c in updates} == {call}
    at = [i for i, kind in enumerate(seen) if kind == "data-tool-progress"]
    assert seen.index("tool-input-available") < min(at)
    assert max(at) < seen.index("tool-output-available")  # all while the call ran
    (progress,) = [p for p in sent["message"]["parts"] if p["type"] == "data-tool-progress"]
    assert progress["id"] == call
    final = progress["data"]
    assert (final["toolName"], final["status"], final["progress"], final["total"]) == (
        "charts__count",
        "succeeded",
        3,
        3,
    )
    assert final["message"] == "step 3 of 3"
    assert [line["message"] for line in final["logs"]] == ["step 1 done", "step 2 done", "step 3 done"]


@pytest.mark.parametrize("approved", [True, False])
def test_an_approval_is_answered_in_the_tool_part(ai: Path, iris: str, approved: bool) -> None:
    chat, user = f"chat-{uuid.uuid4().hex}", "eve"
    ask = user_message('use tool charts__wipe {"target": "x"}')
    asked = flow(ai, iris, user, "send", chat, messages=[ask], body=MODEL)
    assert asked["chunks"][-1]["finishReason"] == "tool-calls"
    part = tool_part(asked["message"])
    assert part["state"] == "approval-requested", part
    assert part["approval"]["id"].startswith("int_")

    reply = answered(asked["message"], approved, None if approved else "Not now.")
    done = flow(ai, iris, user, "send", chat, messages=[ask, reply], body=MODEL, continues=reply)
    assert done["errors"] == []
    assert done["chunks"][0] == {"type": "start", "messageId": asked["message"]["id"]}  # the same answer
    part = tool_part(done["message"])
    said = text_of(done["message"])
    if approved:
        assert part["state"] == "output-available", part
        assert "Tool charts__wipe returned" in said, said
    else:
        assert "tool-output-denied" in types(done)
        assert part["state"] == "output-denied", part
        assert "The user declined this call" in said, said
        assert "Their reason: Not now." in said, said  # the model was told why
    (_, answer) = flow(ai, iris, user, "messages", chat)["messages"]
    assert tool_part(answer)["state"] == part["state"]


def test_a_tools_question_is_answered_in_its_data_part(ai: Path, iris: str) -> None:
    """An MCP tool's question arrives as a ``data-interrupt`` part (the SDK keeps it in the message);
    the client gives its ``data`` a ``response`` and sends the message back: the call resumes."""
    chat, user = f"chat-{uuid.uuid4().hex}", "ivy"
    ask = user_message("use tool charts__ask_contact {}")
    asked = flow(ai, iris, user, "send", chat, messages=[ask], body=MODEL)
    (question,) = [p for p in asked["message"]["parts"] if p["type"] == "data-interrupt"]
    assert (question["data"]["reason"], question["data"]["responseSchema"]["required"]) == (
        "input_required",
        ["name"],
    )
    response = {"status": "resolved", "payload": {"action": "accept", "content": {"name": "Ivy"}}}
    given = {**question, "data": {**question["data"], "response": response}}
    parts = [given if p is question else p for p in asked["message"]["parts"]]
    reply = {**asked["message"], "parts": parts}
    done = flow(ai, iris, user, "send", chat, messages=[ask, reply], body=MODEL, continues=reply)
    assert done["errors"] == []
    assert tool_part(done["message"])["state"] == "output-available"
    assert "sending to Ivy (subscribe: False)" in str(tool_part(done["message"])["output"])


def test_regenerate_answers_again_on_a_sibling_branch(ai: Path, iris: str) -> None:
    chat = f"chat-{uuid.uuid4().hex}"
    first = flow(ai, iris, "fay", "send", chat, messages=[user_message("once")], body=MODEL)
    again = flow(
        ai,
        iris,
        "fay",
        "send",
        chat,
        messages=[user_message("once")],
        trigger="regenerate-message",
        messageId=first["message"]["id"],
        body=MODEL,
    )
    assert again["errors"] == []
    assert again["message"]["id"] != first["message"]["id"]
    assert "You said: once" in text_of(again["message"])
    (_user, answer) = flow(ai, iris, "fay", "messages", chat)["messages"]
    assert answer["id"] == again["message"]["id"]  # the new branch is the active path


def test_refusals_come_before_the_stream_and_store_nothing(iris: str) -> None:
    url = f"{iris}/api/agents/default/ui-chat"
    chat = f"chat-{uuid.uuid4().hex}"
    ann = {"Authorization": f"Bearer {user_token('gus')}"}
    video = {"type": "file", "mediaType": "video/mp4", "url": "data:video/mp4;base64,AAAA"}
    refused = httpx.post(url, headers=ann, json={"id": chat, "messages": [user_message("hi", video)]})
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["code"] == "unsupported_media_type"
    lying = {**data_part("pdf"), "mediaType": "image/png"}
    refused = httpx.post(url, headers=ann, json={"id": chat, "messages": [user_message("hi", lying)]})
    assert refused.status_code == 422, refused.text
    assert httpx.get(f"{url}/{chat}/messages", headers=ann).json() == []  # no session was made

    made = httpx.post(url, headers=ann, json={"id": chat, "messages": [user_message("hi")], **MODEL})
    assert made.status_code == 200
    assert made.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert made.text.endswith("data: [DONE]\n\n")
    other = {"Authorization": f"Bearer {user_token('hal')}"}
    assert httpx.get(f"{url}/{chat}/messages", headers=other).json() == []  # not theirs: none to them
    assert httpx.get(f"{url}/{chat}/stream", headers=other).status_code == 204
    theirs = httpx.post(url, headers=other, json={"id": chat, "messages": [user_message("bye")]})
    assert theirs.status_code == 200  # chat ids are the caller's own: this is another chat
    mine = httpx.get(f"{url}/{chat}/messages", headers=ann).json()
    assert next(p["text"] for m in mine for p in m["parts"] if p["type"] == "text") == "hi"


def test_the_capabilities_name_the_surface_and_its_protocol_version(iris: str) -> None:
    ann = {"Authorization": f"Bearer {user_token('ivy')}"}
    surface = httpx.get(f"{iris}/agent/capabilities", headers=ann).json()["custom"]["iris/uiChat"]
    assert (surface["protocol"], surface["version"]) == ("ai-sdk-ui-message-stream", "v1")
    chat = f"chat-{uuid.uuid4().hex}"
    url = iris + surface["path"].format(slug="default")
    made = httpx.post(url, headers=ann, json={"id": chat, "messages": [user_message("hi")], **MODEL})
    assert made.status_code == 200, made.text
    assert made.headers["x-vercel-ai-ui-message-stream"] == surface["version"]
    history = httpx.get(iris + surface["messagesPath"].format(slug="default", id=chat), headers=ann)
    assert [m["role"] for m in history.json()] == ["user", "assistant"]
    resume = httpx.get(iris + surface["resumePath"].format(slug="default", id=chat), headers=ann)
    assert resume.status_code == 204  # nothing runs
