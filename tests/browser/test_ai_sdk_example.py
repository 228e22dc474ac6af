"""The example frontend (examples/ai-sdk-chat: ``@ai-sdk/react``'s ``useChat``, bundled here with the
installed esbuild) in Chromium against Iris on another origin: a message with an image and a PDF sent
as the hook sends files, streamed and shown; a tool approved with the example's button; a reload that
shows the conversation again (the history endpoint); and a reload in the middle of a slow answer that
resumes it (``resume: true``)."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from urllib.parse import urlencode

import pytest
from playwright.sync_api import FilePayload, Page, expect

from iris.app.security.auth import issue_token
from tests.browser.conftest import JWT_SECRET, Site
from tests.support.agents import offer_sync
from tests.support.documents import text_pdf
from tests.support.images import image_bytes
from tests.support.npm import NODE_MODULES, ROOT
from tests.support.waits import INSTALL_SECONDS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EXAMPLE = ROOT / "examples" / "ai-sdk-chat"


@pytest.fixture(scope="module")
def example(site: Site) -> str:
    """The example bundled into the static site's pages; its path there."""
    if shutil.which("node") is None or not (NODE_MODULES / "esbuild").is_dir():
        pytest.skip("node and the project's esbuild are needed to bundle the example")
    where = site.pages / "ai-sdk-chat"
    (where / "dist").mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE / "index.html", where / "index.html")
    bundled = subprocess.run(
        [
            str(NODE_MODULES / ".bin" / "esbuild"),
            str(EXAMPLE / "app.jsx"),
            "--bundle",
            "--format=esm",
            "--jsx=automatic",
            "--define:process.env.NODE_ENV='production'".replace("'", '"'),
            f"--outfile={where / 'dist' / 'app.js'}",
        ],
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
        check=False,
    )
    assert bundled.returncode == 0, bundled.stderr
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    offer_sync(site.base, admin, "local/multimodal")
    return f"{site.allowed_origin}/ai-sdk-chat/index.html"


def open_chat(page: Page, example: str, site: Site, model: str) -> None:
    token = issue_token(JWT_SECRET, f"example-{uuid.uuid4().hex[:8]}")
    page.goto(f"{example}?{urlencode({'iris': site.base, 'token': token, 'model': model})}")
    expect(page.locator("#status")).to_have_text("ready")


def send(page: Page, text: str, files: list[tuple[str, str, bytes]] = []) -> None:  # noqa: B006
    page.get_by_label("Message").fill(text)
    if files:
        page.get_by_label("Files").set_input_files(
            [FilePayload(name=name, mimeType=kind, buffer=data) for name, kind, data in files]
        )
    page.get_by_role("button", name="Send").click()


def test_the_example_sends_files_approves_a_tool_and_reloads(page: Page, site: Site, example: str) -> None:
    open_chat(page, example, site, "local/multimodal")
    png = image_bytes("PNG", (64, 48), (200, 30, 30))
    pdf = text_pdf(["Example report\nRead me."])
    send(page, "What are these?", [("red.png", "image/png", png), ("report.pdf", "application/pdf", pdf)])
    answer = page.locator("li.assistant").first
    expect(answer).to_contain_text("64x48")
    expect(answer).to_contain_text("Document 1 (report.pdf)")
    expect(page.locator("#status")).to_have_text("ready")

    send(page, 'use tool charts__wipe {"target": "example"}')
    page.get_by_role("button", name="Approve").click()
    expect(page.locator('.tool[data-state="output-available"]')).to_have_count(1)
    expect(page.locator("li.assistant").last).to_contain_text("Tool charts__wipe returned")
    expect(page.locator("#status")).to_have_text("ready")

    page.reload()
    expect(page.locator("li.user")).to_have_count(2)
    expect(page.locator("li.user").first.locator("img")).to_have_attribute("alt", "red.png")
    expect(page.locator("li.user").first.get_by_role("link", name="report.pdf")).to_be_visible()
    expect(page.locator("li.assistant").first).to_contain_text("64x48")
    expect(page.locator('.tool[data-state="output-available"]')).to_have_count(1)


def test_a_reload_mid_answer_resumes_it(page: Page, site: Site, example: str) -> None:
    open_chat(page, example, site, "local/slow")
    words = " ".join(f"w{i}" for i in range(80))
    send(page, words)
    expect(page.locator("li.assistant")).to_contain_text("w3")
    page.reload()  # the answer is still running: the hook resumes its stream
    expect(page.locator("li.assistant")).to_contain_text(f"You said: {words}")
    expect(page.locator("li.user")).to_have_count(1)
