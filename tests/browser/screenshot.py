"""Take the README's screenshot of the chat page, and the main views at a desktop's and a phone's size,
light and dark, with the browser tests' own set-up:
``.venv/bin/python -m tests.browser.screenshot docs/chat-page.png docs/screenshots``."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, sync_playwright

from iris.app.security.auth import issue_token
from tests.browser.chat_page import (
    file_payload,
    open_as_guest,
    open_keys_panel,
    pick,
    png,
    send,
    sign_in_with_token,
    wait_idle,
    wait_thumbnails,
)
from tests.browser.conftest import CHROMIUM_FLAGS, JWT_SECRET, find_chromium
from tests.support.agents import offer_sync
from tests.support.databases import migrate, sqlite_url
from tests.support.iris_process import iris_process
from tests.support.postgres import free_port
from tests.support.waits import REQUEST_SECONDS

SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
ANSWER_WITH_CODE = "Show me some code:\n```python\ndef greet(name):\n    return f'Hello, {name}'\n```"


def converse(page: Page, base: str) -> None:
    """A chat worth looking at: an image and its description, a tool call, code, a draft in the composer."""
    open_as_guest(page, base)
    pick(page, file_payload("sunset.png", png((640, 360), (245, 140, 30))))
    wait_thumbnails(page, 1)
    send(page, "What is in this picture?")
    wait_idle(page)
    send(page, "use tool current_time {}")
    wait_idle(page)
    send(page, ANSWER_WITH_CODE)
    wait_idle(page)


def views(browser: Browser, base: str, folder: Path) -> None:
    """Each main view at both sizes, light and dark."""
    for size, viewport in SIZES.items():
        for scheme in ("light", "dark"):
            context = browser.new_context(viewport=viewport, color_scheme=scheme)  # type: ignore[arg-type]
            page = context.new_page()
            page.goto(base + "/")
            page.get_by_role("button", name="Continue as guest").wait_for()
            page.screenshot(path=str(folder / f"signed-out-{size}-{scheme}.png"))
            converse(page, base)
            page.screenshot(path=str(folder / f"chat-{size}-{scheme}.png"))
            if size == "phone":
                page.get_by_role("button", name="Chats", exact=True).click()
                page.wait_for_timeout(300)
                page.screenshot(path=str(folder / f"drawer-{size}-{scheme}.png"))
            context.close()


def keys_panel(browser: Browser, base: str, folder: Path) -> None:
    """The "Keys & spend" panel of a user who has chatted and just made a key: both sizes, light and dark."""
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    pricing = {"pricing": {"input": 3.0, "output": 15.0}}
    priced = {
        "name": "Priced echo",
        "provider": "local",
        "modelId": "priced",
        "type": "text",
        "options": pricing,
    }
    httpx.post(f"{base}/api/models", json=priced, headers=admin, timeout=REQUEST_SECONDS).raise_for_status()
    offer_sync(base, admin, "local/priced")
    token = issue_token(JWT_SECRET, "robin")
    for size, viewport in SIZES.items():
        for scheme in ("light", "dark"):
            context = browser.new_context(viewport=viewport, color_scheme=scheme)  # type: ignore[arg-type]
            page = context.new_page()
            sign_in_with_token(page, base, token)
            page.get_by_label("Model", exact=True).select_option(label="Priced echo (text)")
            send(page, "What would a long answer cost?")
            wait_idle(page)
            panel = open_keys_panel(page)
            panel.get_by_label("Name").fill(f"CI ({size}, {scheme})")
            panel.get_by_role("button", name="Create key").click()
            panel.get_by_role("button", name="Copy key").wait_for()
            page.screenshot(path=str(folder / f"keys-panel-{size}-{scheme}.png"))
            context.close()


def main(target: Path, folder: Path | None) -> None:
    chromium = find_chromium()
    if chromium is None:
        sys.exit("no Chromium found")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        migrate(sqlite_url(root / "iris.db"))
        port = free_port()
        env = {
            "IRIS_DATA_DIR": str(root / "data"),
            "IRIS_DATABASE_URL": sqlite_url(root / "iris.db"),
            "IRIS_JWT_SECRET": JWT_SECRET,
            "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port}",
        }
        with iris_process(env, port, root / "iris.log") as iris, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1100, "height": 760})
            open_as_guest(page, iris.base_url)
            pick(page, file_payload("sunset.png", png((640, 360), (245, 140, 30))))
            wait_thumbnails(page, 1)
            send(page, "What is in this picture?")
            wait_idle(page)
            send(page, "use tool current_time {}")
            wait_idle(page)
            pick(page, file_payload("sky.png", png((320, 200), (30, 60, 220))))
            wait_thumbnails(page, 1)
            page.get_by_role("textbox", name="Message").fill("And this one?")
            page.screenshot(path=str(target))
            if folder is not None:
                folder.mkdir(parents=True, exist_ok=True)
                views(browser, iris.base_url, folder)
                keys_panel(browser, iris.base_url, folder)
            browser.close()
    print(target, folder or "")


if __name__ == "__main__":
    main(
        Path(sys.argv[1] if len(sys.argv) > 1 else "docs/chat-page.png"),
        Path(sys.argv[2]) if len(sys.argv) > 2 else None,
    )
