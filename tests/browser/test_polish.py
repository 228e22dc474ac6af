"""What users expect of a chat page, on this one: copy buttons on messages and code blocks, code
highlighted with its language named, timestamps, the chat's name in the tab title, a favicon, a
greeting on an empty chat, a composer that grows, undo after delete, and a tool call shown as its card
only (no empty "Usage" bubble), with the same usage figures live and after a reload."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.chat_page import (
    assistant_messages,
    message_box,
    open_as_guest,
    send,
    user_messages,
    wait_idle,
)
from tests.browser.conftest import Site

CODE = "code:\n```python\ndef greet(name):\n    return 'hi ' + name\n```"


def test_copy_buttons_and_highlighted_code(page: Page, site: Site) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_as_guest(page, site.base)
    expect(page.get_by_text("What can I help with?")).to_be_visible()  # the empty chat greets
    box = message_box(page)
    box.fill(CODE)
    height = box.evaluate("(node) => node.getBoundingClientRect().height")
    assert height > 60  # it grew with the five lines
    box.press("Enter")
    wait_idle(page)
    expect(page.get_by_text("What can I help with?")).to_be_hidden()
    answer = assistant_messages(page).last
    block = answer.locator(".code-block")
    expect(block.locator(".code-head")).to_contain_text("python")
    expect(block.locator(".hljs-keyword").first).to_have_text("def")
    block.get_by_role("button", name="Copy code").click()
    expect(block.get_by_role("button", name="Copied")).to_be_visible()
    assert (
        page.evaluate("() => navigator.clipboard.readText()") == "def greet(name):\n    return 'hi ' + name\n"
    )
    answer.get_by_role("button", name="Copy this message").click()
    assert "You said: code:" in page.evaluate("() => navigator.clipboard.readText()")
    expect(answer.locator("time")).to_have_text(re.compile(r"\d{1,2}:\d{2}"))
    expect(user_messages(page).last.locator("time")).to_be_visible()
    expect(page).to_have_title(re.compile(r"^code: .* · Iris$"))  # the chat's title
    assert page.locator("link[rel=icon]").get_attribute("href") == "/static/chat/favicon.svg"


def test_delete_can_be_undone(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "keep me after all")
    wait_idle(page)
    page.get_by_role("button", name="Actions for chat keep me after all").click()
    page.get_by_role("menuitem", name="Delete").click()
    sessions = page.get_by_role("navigation", name="Sessions").get_by_role("listitem")
    expect(sessions).to_have_count(0)
    page.get_by_role("button", name="Undo").click()
    expect(sessions).to_have_count(1)
    expect(user_messages(page).first).to_contain_text("keep me after all")
    page.wait_for_timeout(6500)  # past the undo window: nothing was deleted
    page.reload()
    expect(page.get_by_role("navigation", name="Sessions").get_by_role("listitem")).to_have_count(1)


def test_a_tool_call_is_one_card_with_the_same_usage_live_and_after_reload(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "use tool current_time {}")
    wait_idle(page)
    messages = page.get_by_role("list", name="Messages")
    expect(messages.get_by_label("Tool call current_time")).to_have_count(1)
    for item in assistant_messages(page).all():
        expect(item.locator(".text")).not_to_have_count(0)  # no bubble holding only "Usage"
    live = [u.inner_text() for u in messages.locator(".usage").all()]
    assert live
    assert all(u.startswith("Usage: ") for u in live)
    page.reload()
    expect(messages.get_by_label("Tool call current_time")).to_have_count(1)
    expect(messages.locator(".usage")).to_have_count(len(live))
    assert [u.inner_text() for u in messages.locator(".usage").all()] == live
