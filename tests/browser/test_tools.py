"""Tool calls on the chat page: an MCP tool's image in the live stream and again in history after a
reload, and approval of an MCP tool that does not say it is read-only."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.browser.chat_page import assistant_messages, open_as_guest, send, wait_idle
from tests.browser.conftest import Site

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _loaded(page: Page, selector: str) -> None:
    """Every image under ``selector`` really decoded (a broken URL has no natural width)."""
    page.wait_for_function(
        "s => [...document.querySelectorAll(s)].length > 0"
        " && [...document.querySelectorAll(s)].every(i => i.complete && i.naturalWidth > 0)",
        arg=selector,
    )


def test_an_mcp_tools_image_shows_live_and_after_a_reload(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "use tool charts__chart " + json.dumps({"values": [3, 1, 2]}))
    wait_idle(page)
    card = page.get_by_label("Tool call charts__chart")
    expect(card).to_contain_text("A bar chart of 3 values.")
    _loaded(page, ".tool-call .tool-images img")
    expect(assistant_messages(page).last).to_contain_text("Image 1: PNG, 480x320 pixels")

    page.reload()
    card = page.get_by_label("Tool call charts__chart")
    expect(card).to_contain_text('charts__chart({"values":[3,1,2]})')
    _loaded(page, ".tool-call .tool-images img")
    expect(page.locator(".msg.assistant .usage").first).to_be_visible()  # past answers keep their usage


def test_an_mcp_tool_asks_first_and_runs_once_approved(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "use tool charts__wipe " + json.dumps({"target": "browser"}))
    wait_idle(page)
    approval = page.get_by_role("region", name="Approval needed")
    expect(approval).to_be_visible()
    expect(approval).to_contain_text("charts__wipe")
    page.get_by_role("button", name="Approve").click()
    wait_idle(page)
    expect(page.get_by_label("Tool call charts__wipe")).to_contain_text("wiped browser")


def test_a_tools_resource_link_is_read_on_request(page: Page, site: Site) -> None:
    """A stored tool card offers Read for a server's resource link: its text, or its image, appears; a
    web link stays a link; a link the server cannot read says why."""
    open_as_guest(page, site.base)
    send(page, "use tool charts__linked {}")
    wait_idle(page)
    page.reload()
    card = page.get_by_label("Tool call charts__linked")
    expect(card.get_by_role("link", name="report")).to_have_attribute(
        "href", "https://example.com/report.pdf"
    )
    card.get_by_role("button", name="Read greeting").click()
    expect(card.get_by_label("Contents of greeting")).to_have_text("hello from a note")
    card.get_by_role("button", name="Read chart").click()
    _loaded(page, ".tool-call .resource-link img")
    card.get_by_role("button", name="Read missing").click()
    expect(card.get_by_role("status")).to_contain_text("Not read:")
    page.reload()  # what was read is kept, and shown again
    expect(page.get_by_label("Contents of greeting")).to_have_text("hello from a note")
    _loaded(page, ".tool-call .resource-link img")
