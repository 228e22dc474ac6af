"""The run's usage sums the estimates of the PDFs and audio sent natively, like the images' — per request
(a later turn re-sends them), in ``RUN_FINISHED.metadata["iris/usage"]``, ``WorkerAgentOutput.usage``,
the stored run and the session's usage — and leaves them out for a document sent as its text."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.runs.content.outputs import WORKER_OUTPUT_KEY
from iris.providers.local import AUDIO_SECOND_TOKENS, PDF_PAGE_TOKENS
from tests.support.agui import check_stream
from tests.support.documents import text_pdf, wav_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import of_type, run, run_input, upload, user_message

Client = AsyncTestClient[Litestar]
PDF = text_pdf(["Quarterly report", "Costs fell.", "Outlook"])
PAGE, SECOND = PDF_PAGE_TOKENS, AUDIO_SECOND_TOKENS


def billed(events: list[dict[str, Any]]) -> dict[str, Any]:
    usage: dict[str, Any] = of_type(events, "RUN_FINISHED")[0]["metadata"]["iris/usage"]
    return usage


def worker_usage(events: list[dict[str, Any]]) -> dict[str, Any]:
    (end,) = [
        e for e in of_type(events, "TEXT_MESSAGE_END") if WORKER_OUTPUT_KEY in (e.get("metadata") or {})
    ]
    usage: dict[str, Any] = end["metadata"][WORKER_OUTPUT_KEY]["usage"]
    return usage


async def test_native_pdfs_and_audio_are_summed_into_the_runs_and_the_sessions_usage(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    pdf = await upload(client, alice, thread, data=PDF, name="report.pdf")
    wav = await upload(client, alice, thread, data=wav_bytes(2.5), name="note.wav")
    body = run_input(
        thread, user_message("Read.", pdf["parts"]["agui"], wav["parts"]["agui"]), model="local/multimodal"
    )

    events = await run(client, alice, body)

    (user, _) = await stored.messages(thread)
    estimates = {p["type"]: p["tokenEstimate"]["tokens"] for p in user.parts or () if "tokenEstimate" in p}
    assert estimates == {"document": 3 * PAGE, "audio": round(2.5 * SECOND)}
    usage = billed(events)
    assert usage["estimatedDocumentTokens"] == estimates["document"]
    assert usage["estimatedAudioTokens"] == estimates["audio"]
    assert worker_usage(events)["estimatedDocumentTokens"] == estimates["document"]
    assert worker_usage(events)["estimatedAudioTokens"] == estimates["audio"]

    again = run_input(thread, user_message("And again?"), model="local/multimodal")
    await run(client, alice, again)  # the thread's PDF and clip go with this request too
    response = await client.get(f"/api/agents/default/sessions/{thread}/usage", headers=alice)
    assert response.status_code == 200, response.text
    (entry,) = response.json()["usage"]
    assert entry["estimatedDocumentTokens"] == 2 * estimates["document"]
    assert entry["estimatedAudioTokens"] == 2 * estimates["audio"]


async def test_a_document_sent_as_its_text_has_no_document_estimate(
    client: Client, alice: dict[str, str]
) -> None:
    thread = str(uuid.uuid4())
    pdf = await upload(client, alice, thread, data=PDF, name="report.pdf")
    body = run_input(thread, user_message("Read.", pdf["parts"]["agui"]), model="local/text")

    usage = billed(await run(client, alice, body))

    assert "estimatedDocumentTokens" not in usage
    assert "estimatedAudioTokens" not in usage
    assert usage["inputTokens"] > 0  # its text is counted as the input it is


async def test_the_stateless_chat_reports_the_estimates_too(client: Client, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    pdf = await upload(client, alice, thread, data=PDF, name="report.pdf")
    body = {"modelId": "local/multimodal", "parts": [pdf["parts"]["chat"]]}

    response = await client.post("/api/llm/chat", json=body, headers=alice)
    assert response.status_code == 200, response.text
    events = check_stream(response.content)

    assert billed(events)["estimatedDocumentTokens"] == 3 * PAGE
