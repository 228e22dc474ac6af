"""The composer with PDFs and audio (chips with pages, thumbnail, player; refused where the model does not
read them), and answers rendered as Markdown with nothing in them executed."""

from __future__ import annotations

import json

import httpx
import pytest
from playwright.sync_api import Page, expect

from iris.app.security.auth import issue_token
from tests.browser.chat_page import assistant_messages, file_payload, open_as_guest, png, send, wait_idle
from tests.browser.conftest import JWT_SECRET, Site
from tests.support.agents import offer_sync
from tests.support.documents import text_pdf, wav_bytes
from tests.support.waits import REQUEST_SECONDS

READER = {
    "name": "Reader",
    "provider": "local",
    "modelId": "reader",
    "type": "multimodal",
    "supportsTools": False,
    "guestVisible": True,
}


@pytest.fixture(scope="module")
def reader(site: Site) -> str:
    """A guest-visible ``multimodal`` model on the default agent: one the page lets take PDFs and audio."""
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    created = httpx.post(f"{site.base}/api/models", json=READER, headers=admin, timeout=REQUEST_SECONDS)
    assert created.status_code in (201, 409), created.text
    offer_sync(site.base, admin, "local/reader")
    return "Reader (multimodal)"


@pytest.fixture(scope="module")
def multimodal(site: Site) -> str:
    """The seeded offline ``local/multimodal`` model, offered to guests by the default agent."""
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    offer_sync(site.base, admin, "local/multimodal")
    return "Local multimodal (offline test model) (multimodal)"


def choose(page: Page, label: str) -> None:
    page.get_by_label("Model", exact=True).select_option(label=label)


def test_a_pdf_and_an_audio_file_become_chips(page: Page, site: Site, reader: str) -> None:
    open_as_guest(page, site.base)
    choose(page, reader)
    files = [
        file_payload("report.pdf", text_pdf(["one", "two", "three"]), "application/pdf"),
        file_payload("memo.wav", wav_bytes(2.0), "audio/wav"),
    ]
    page.get_by_label("Attach files").set_input_files(files)  # type: ignore[arg-type]
    attachments = page.get_by_role("list", name="Attachments")
    pdf = attachments.get_by_label("PDF report.pdf")
    expect(pdf).to_contain_text("3 pages")
    expect(pdf.get_by_role("img", name="First page of report.pdf")).to_be_visible()
    audio = attachments.get_by_label("Audio memo.wav")
    expect(audio).to_contain_text("2.0 s")
    player = audio.locator("audio")
    expect(player).to_have_count(1)
    page.wait_for_function(
        "() => { const a = document.querySelector('#attachments audio');"
        " return a && a.duration > 1.9 && a.duration < 2.1; }"
    )
    # The thumbnail really loaded (a signed URL the page can show).
    assert pdf.get_by_role("img").evaluate("img => img.complete && img.naturalWidth > 0")


def test_a_pdf_and_audio_reach_the_multimodal_model(page: Page, site: Site, multimodal: str) -> None:
    open_as_guest(page, site.base)
    choose(page, multimodal)
    files = [
        file_payload("minutes.pdf", text_pdf(["Board minutes", "page two"]), "application/pdf"),
        file_payload("memo.wav", wav_bytes(1.5), "audio/wav"),
    ]
    page.get_by_label("Attach files").set_input_files(files)  # type: ignore[arg-type]
    attachments = page.get_by_role("list", name="Attachments")
    expect(attachments.get_by_label("PDF minutes.pdf")).to_contain_text("2 pages")
    expect(attachments.get_by_label("Audio memo.wav")).to_contain_text("1.5 s")
    send(page, "what are these?")
    # The sent message shows the same chips at once.
    sent = page.get_by_role("list", name="Messages").get_by_label("user message").last
    expect(sent.get_by_label("PDF minutes.pdf")).to_contain_text("2 pages")
    expect(sent.get_by_label("Audio memo.wav").locator("audio")).to_have_count(1)
    wait_idle(page)
    answer = assistant_messages(page).last
    expect(answer).to_contain_text("PDF, 2 pages")
    expect(answer).to_contain_text("Board minutes")
    expect(answer).to_contain_text("1.50 seconds")
    # After a reload the history shows the same chips, from freshly signed URLs.
    page.reload()
    sent = page.get_by_role("list", name="Messages").get_by_label("user message").last
    pdf = sent.get_by_label("PDF minutes.pdf")
    expect(pdf).to_contain_text("2 pages")
    expect(pdf.get_by_role("img", name="First page of minutes.pdf")).to_be_visible()
    page.wait_for_function(
        "() => [...document.querySelectorAll('#messages img.thumbnail')]"
        ".some((i) => i.complete && i.naturalWidth > 0)"
    )
    audio = sent.get_by_label("Audio memo.wav")
    expect(audio).to_contain_text("1.5 s")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#messages audio')].some((a) => a.duration > 1.4)"
    )


def test_a_model_that_reads_no_pdfs_refuses_one_visibly(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    pdf = file_payload("report.pdf", text_pdf(["x"]), "application/pdf")
    page.locator("#file").set_input_files([pdf])  # type: ignore[arg-type]
    expect(page.get_by_role("status").filter(has_text="does not read PDFs")).to_be_visible()
    expect(page.get_by_role("list", name="Attachments").get_by_role("listitem")).to_have_count(0)


def test_answers_render_markdown_and_run_no_html(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    page.evaluate("() => { window.__ran = []; }")
    text = "\n".join(
        [
            "look",
            "# A heading",
            "- first item",
            "- second item",
            "",
            "```",
            "code block",
            "```",
            "[a link](https://example.com/x)",
            "<script>window.__ran.push('script')</script>",
            '<img src="data:," onerror="window.__ran.push(\'img\')">',
            "<a href=\"javascript:window.__ran.push('link')\">click</a>",
        ]
    )
    send(page, text)
    wait_idle(page)
    answer = assistant_messages(page).last
    expect(answer.get_by_role("heading", name="A heading")).to_be_visible()
    expect(answer.get_by_role("listitem")).to_have_count(2)
    expect(answer.locator("pre code")).to_have_text("code block")
    link = answer.get_by_role("link", name="a link")
    expect(link).to_have_attribute("href", "https://example.com/x")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    assert answer.locator("script, [onerror]").count() == 0
    click = answer.get_by_text("click")
    assert click.evaluate("node => (node.getAttribute('href') || '').startsWith('javascript:')") is False
    assert page.evaluate("() => window.__ran") == []
    # The user's own message stays plain text.
    expect(page.get_by_role("list", name="Messages").get_by_label("user message").last).to_contain_text(
        "# A heading"
    )


def test_a_429_says_when_to_try_again(page: Page, site: Site) -> None:
    problem = {
        "type": "urn:iris:problem:quota_exceeded",
        "title": "Quota exceeded",
        "status": 429,
        "code": "quota_exceeded",
        "detail": "You may upload 5 files a minute.",
        "extra": {"limit": "uploads_per_minute", "allowed": 5, "retryAfterSeconds": 42},
    }
    page.route(
        "**/api/files",
        lambda route: route.fulfill(
            status=429,
            headers={"Retry-After": "42", "Content-Type": "application/problem+json"},
            body=json.dumps(problem),
        ),
    )
    open_as_guest(page, site.base)
    page.get_by_label("Attach images").set_input_files([file_payload("one.png", png((8, 8)))])  # type: ignore[arg-type]
    expect(page.get_by_role("alert")).to_contain_text(
        "You may upload 5 files a minute. (quota_exceeded) Try again in 42 s"
    )
