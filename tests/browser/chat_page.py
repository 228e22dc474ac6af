"""What a user does on the chat page, in Playwright terms: controls are found by role and label."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.support.images import image_bytes


def png(size: tuple[int, int], color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    return image_bytes("PNG", size, color)


def file_payload(name: str, data: bytes, mime: str = "image/png") -> dict[str, object]:
    return {"name": name, "mimeType": mime, "buffer": data}


def open_as_guest(page: Page, base: str, path: str = "/") -> None:
    page.goto(base + path)
    page.get_by_role("button", name="Continue as guest").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def message_box(page: Page) -> Locator:
    return page.get_by_role("textbox", name="Message")


def assistant_messages(page: Page) -> Locator:
    return page.get_by_role("list", name="Messages").get_by_label("assistant message")


def user_messages(page: Page) -> Locator:
    return page.get_by_role("list", name="Messages").get_by_label("user message")


def wait_idle(page: Page) -> None:
    """The answer has ended and the history has been re-read (Stop hides, Send enables)."""
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()


def send(page: Page, text: str) -> None:
    message_box(page).fill(text)
    message_box(page).press("Enter")


def pick(page: Page, *files: dict[str, object]) -> None:
    page.get_by_label("Attach images").set_input_files(list(files))  # type: ignore[arg-type]


def wait_thumbnails(page: Page, count: int) -> None:
    attachments = page.get_by_role("list", name="Attachments")
    expect(attachments.get_by_role("img")).to_have_count(count)


_DISPATCH = """(target, [kind, files]) => {
    const transfer = new DataTransfer();
    for (const [name, type, b64] of files) {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        transfer.items.add(new File([bytes], name, { type }));
    }
    const event = kind === "paste"
        ? new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true })
        : new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true });
    target.dispatchEvent(event);
}"""


def _encoded(files: tuple[tuple[str, bytes], ...]) -> list[list[str]]:
    return [[name, "image/png", base64.b64encode(data).decode()] for name, data in files]


def paste(page: Page, *files: tuple[str, bytes]) -> None:
    """A paste of image files into the message box (``clipboardData`` carrying files, as a browser's)."""
    message_box(page).evaluate(_DISPATCH, ["paste", _encoded(files)])


def drop(page: Page, *files: tuple[str, bytes]) -> None:
    """Files dropped on the composer (a ``drop`` event whose ``dataTransfer`` holds them)."""
    page.get_by_role("form", name="Composer").evaluate(_DISPATCH, ["drop", _encoded(files)])


AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"


def serious(page: Page) -> list[dict[str, Any]]:
    """The serious and critical violations axe-core finds on the page as it is now."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(
        """async () => (await axe.run(document, { resultTypes: ["violations"] })).violations
            .filter((v) => v.impact === "serious" || v.impact === "critical")
            .map((v) => ({
                id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5),
            }))"""
    )
    return found


def sign_in_with_token(page: Page, base: str, token: str, path: str = "/") -> None:
    """Paste an access token into the sign-in form, as a user with an account does."""
    page.goto(base + path)
    page.get_by_label("Access token").fill(token)
    page.get_by_role("button", name="Use token").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def open_keys_panel(page: Page) -> Locator:
    """The "Keys & spend" dialog, opened from the header, once it has read the caller's spend."""
    page.get_by_role("button", name="Keys & spend").click()
    panel = page.get_by_role("dialog", name="Keys & spend")
    expect(panel).to_be_visible()
    expect(panel.get_by_role("table")).to_contain_text("Total")
    return panel
