"""A running tool's progress on the chat page: an MCP tool that reports progress shows a line under its
call (the server's message and the percentage) while it runs, and the line goes when the call answers."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.browser.chat_page import open_as_guest, send, wait_idle
from tests.browser.conftest import Site

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_running_tools_progress_shows_under_its_call(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "use tool charts__count " + json.dumps({"steps": 4, "pause": 1.0}))
    card = page.get_by_label("tool message").last
    line = card.locator(".tool-progress")
    expect(line).to_have_text("step 2 of 4 · 50%")
    expect(line).to_have_attribute("role", "status")
    wait_idle(page)
    expect(line).to_have_count(0)
    expect(page.get_by_label("Tool call charts__count")).to_contain_text("counted to 4")
