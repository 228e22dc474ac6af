"""Take the README's screenshot of the chat page with the browser tests' own set-up:
``.venv/bin/python -m tests.browser.screenshot docs/chat-page.png``."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.chat_page import file_payload, open_as_guest, pick, png, send, wait_idle, wait_thumbnails
from tests.browser.conftest import CHROMIUM_FLAGS, JWT_SECRET, find_chromium
from tests.support.databases import migrate, sqlite_url
from tests.support.iris_process import iris_process
from tests.support.postgres import free_port


def main(target: Path) -> None:
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
            browser.close()
    print(target)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/chat-page.png"))
