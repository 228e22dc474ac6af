"""PDFs and audio through ``/agent/runs`` and the chat surface, against the offline local models: read
natively by ``local/multimodal``, sent as labelled page texts to a model that does not read PDFs,
refused (422 ``unsupported_part``, nothing stored) as audio a model cannot hear, and never failing a
run when the model changes mid-conversation (the poisoned-history case)."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.persistence.db import create_engine
from iris.app.persistence.repositories import UploadRepository
from iris.app.settings import Settings
from iris.app.storage.factory import create_storage
from tests.support.documents import mp3_bytes, text_pdf, wav_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import (
    CHAT,
    answer_text,
    chat,
    chat_history,
    of_type,
    run,
    run_input,
    upload,
    user_message,
)

Client = AsyncTestClient[Litestar]
PDF = text_pdf(["Quarterly report\nRevenue rose.", "Costs fell."])


async def attach(
    client: Client, headers: dict[str, str], thread: str, data: bytes, name: str
) -> dict[str, Any]:
    return await upload(client, headers, thread, data=data, name=name)


async def test_local_multimodal_reads_an_uploaded_pdf_and_wav(client: Client, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    pdf = await attach(client, alice, thread, PDF, "report.pdf")
    wav = await attach(client, alice, thread, wav_bytes(2.0), "note.wav")
    body = run_input(
        thread,
        user_message("What are these?", pdf["parts"]["agui"], wav["parts"]["agui"]),
        model="local/multimodal",
    )

    answer = answer_text(await run(client, alice, body))

    assert 'Document 1 (report.pdf): PDF, 2 pages, first line: "Quarterly report".' in answer
    assert "Audio 1 (note.wav): WAV, 2.00 seconds" in answer


async def test_a_model_without_native_pdf_gets_the_pages_as_labelled_text(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    pdf = await attach(client, alice, thread, PDF, "report.pdf")

    answer = answer_text(
        await run(
            client,
            alice,
            run_input(thread, user_message("Sum up.", pdf["parts"]["agui"]), model="local/text"),
        )
    )

    assert '[document "report.pdf", 2 pages, sent as its text]' in answer
    assert "[page 1]\nQuarterly report\nRevenue rose." in answer
    assert "[page 2]\nCosts fell." in answer
    (user, _) = await stored.messages(thread)
    document = next(p for p in user.parts or () if p["type"] == "document")
    assert document["iris/documentFallback"] == {"sent": "text", "pages": 2}


async def test_audio_a_model_cannot_hear_is_refused_before_anything_is_stored(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    clip = await attach(client, alice, thread, mp3_bytes(20), "memo.mp3")
    body = run_input(thread, user_message("Listen.", clip["parts"]["agui"]), model="local/vision")

    response = await client.post("/agent/runs", json=body, headers=alice)

    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["code"] == "unsupported_part"
    assert "local/vision" in problem["detail"]
    assert "memo.mp3" in problem["detail"]
    assert await stored.messages(thread) == []


async def test_a_changed_model_leaves_earlier_audio_out_with_a_notice(
    client: Client, alice: dict[str, str]
) -> None:
    """LibreChat's poisoned conversation: here the second turn, on a model that cannot hear, runs."""
    thread = str(uuid.uuid4())
    clip = await attach(client, alice, thread, wav_bytes(1.0), "note.wav")
    first = run_input(thread, user_message("Listen.", clip["parts"]["agui"]), model="local/multimodal")
    assert "Audio 1 (note.wav)" in answer_text(await run(client, alice, first))

    second = run_input(thread, user_message("And now?"), model="local/vision")
    events = await run(client, alice, second)

    assert of_type(events, "RUN_FINISHED")
    (started,) = of_type(events, "RUN_STARTED")
    assert started["metadata"]["iris/attachmentNotices"] == [
        {
            "name": "note.wav",
            "type": "audio",
            "sent": "omitted",
            "reason": "local/vision cannot hear this audio",
        }
    ]


async def test_a_deleted_document_and_clip_become_notes_and_the_thread_goes_on(
    client: Client, alice: dict[str, str], settings: Settings, database_url: str
) -> None:
    """A tool plugin may delete an upload of the thread (``ToolContext.delete_upload``: the record,
    then the object). A deleted PDF or clip, like a deleted image, is a note in the next request and
    in history; the next run never tries to read the object that is gone."""
    thread = str(uuid.uuid4())
    pdf = await attach(client, alice, thread, PDF, "report.pdf")
    clip = await attach(client, alice, thread, wav_bytes(1.0), "note.wav")
    first = user_message("Read these.", pdf["parts"]["agui"], clip["parts"]["agui"])
    assert "Document 1 (report.pdf)" in answer_text(
        await run(client, alice, run_input(thread, first, model="local/multimodal"))
    )
    storage = create_storage(settings)
    engine = create_engine(database_url)
    try:
        async with AsyncSession(engine) as db, db.begin():
            for uploaded in (pdf, clip):
                gone = await UploadRepository(session=db).delete_owned(UUID(uploaded["id"]), "alice", thread)
                assert gone is not None
                await storage.delete(gone.path)
    finally:
        await engine.dispose()

    events = await run(client, alice, run_input(thread, user_message("And now?"), model="local/multimodal"))

    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    answer = answer_text(events)
    assert "Document 1" not in answer
    assert "Audio 1" not in answer
    history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()["messages"]
    assert history[0]["content"][1:] == [
        {"type": "text", "text": "[document deleted: report.pdf]"},
        {"type": "text", "text": "[audio deleted: note.wav]"},
    ]


async def test_file_sources_and_more_than_one_audio_are_refused(
    client: Client, alice: dict[str, str]
) -> None:
    thread = str(uuid.uuid4())
    handle = {
        "type": "document",
        "source": {"type": "file", "value": "file-abc", "mimeType": "application/pdf"},
    }
    response = await client.post(
        "/agent/runs", json=run_input(thread, user_message("x", handle)), headers=alice
    )
    assert response.status_code == 422
    assert (response.json()["code"], response.json()["field"]) == (
        "file_source_unsupported",
        "messages[0].content[1].source",
    )
    a = await attach(client, alice, thread, wav_bytes(0.5), "a.wav")
    b = await attach(client, alice, thread, wav_bytes(0.5), "b.wav")
    two = run_input(
        thread, user_message("x", a["parts"]["agui"], b["parts"]["agui"]), model="local/multimodal"
    )
    response = await client.post("/agent/runs", json=two, headers=alice)
    assert response.status_code == 422
    assert response.json()["code"] == "too_many_audio"


async def test_the_chat_surface_takes_document_and_audio_parts(client: Client, alice: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    pdf = await attach(client, alice, session, PDF, "report.pdf")
    clip = await attach(client, alice, session, mp3_bytes(40), "memo.mp3")
    events = await chat(
        client,
        alice,
        {
            "sessionId": session,
            "modelId": "local/multimodal",
            "parts": [{"type": "text", "text": "Read these."}, pdf["parts"]["chat"], clip["parts"]["chat"]],
        },
    )
    answer = answer_text(events)
    assert "Document 1 (report.pdf): PDF, 2 pages" in answer
    assert "Audio 1 (memo.mp3): MP3" in answer
    assert CHAT


async def test_history_replays_documents_and_audio_with_fresh_urls_on_both_surfaces(
    client: Client, alice: dict[str, str]
) -> None:
    session = str(uuid.uuid4())
    pdf = await attach(client, alice, session, PDF, "report.pdf")
    clip = await attach(client, alice, session, wav_bytes(1.0), "note.wav")
    parts = [{"type": "text", "text": "Read."}, pdf["parts"]["chat"], clip["parts"]["chat"]]
    await chat(client, alice, {"sessionId": session, "modelId": "local/text", "parts": parts[:2]})
    await chat(
        client, alice, {"sessionId": session, "modelId": "local/multimodal", "parts": [parts[0], parts[2]]}
    )

    first, _, second, _ = await chat_history(client, alice, session)
    _, document = first["parts"]
    assert (document["type"], document["name"], document["pages"]) == ("document", "report.pdf", 2)
    assert document["iris/documentFallback"] == {"sent": "text", "pages": 2}  # local/text got its text
    assert (await client.get(document["document"])).content == PDF
    assert (await client.get(document["thumbnailUrl"])).headers["content-type"] == "image/png"
    _, audio = second["parts"]
    assert (audio["type"], audio["durationSeconds"], audio["mimeType"]) == ("audio", 1.0, "audio/wav")

    response = await client.get(f"/agent/threads/{session}/messages?format=ag-ui", headers=alice)
    assert response.status_code == 200, response.text
    users = [m for m in response.json()["messages"] if m["role"] == "user"]
    agui_document = users[0]["content"][1]
    assert agui_document["type"] == "document"
    assert agui_document["source"]["mimeType"] == "application/pdf"
    assert agui_document["metadata"]["filename"] == "report.pdf"
    assert agui_document["metadata"]["pages"] == 2
    agui_audio = users[1]["content"][1]
    assert (agui_audio["type"], agui_audio["metadata"]["durationSeconds"]) == ("audio", 1.0)
    assert agui_audio["metadata"]["estimatedTokens"] == 32  # one second at 32 tokens a second
    assert "estimatedTokens" not in agui_document["metadata"]  # sent as its text, not natively
    assert (await client.get(agui_audio["source"]["value"])).content == wav_bytes(1.0)


async def test_stateless_llm_chat_reads_a_pdf_and_refuses_unheard_audio(
    client: Client, alice: dict[str, str]
) -> None:
    thread = str(uuid.uuid4())
    pdf = await attach(client, alice, thread, PDF, "report.pdf")
    clip = await attach(client, alice, thread, wav_bytes(0.5), "a.wav")
    body = {"modelId": "local/multimodal", "parts": [pdf["parts"]["chat"]], "stream": False}
    response = await client.post("/api/llm/chat", json=body, headers=alice)
    assert response.status_code == 200, response.text
    assert "Document 1 (report.pdf): PDF, 2 pages" in response.json()["content"]
    body = {"modelId": "local/text", "parts": [clip["parts"]["chat"]]}
    response = await client.post("/api/llm/chat", json=body, headers=alice)
    assert response.status_code == 422
    assert response.json()["code"] == "unsupported_part"
