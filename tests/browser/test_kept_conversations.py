"""Conversations people keep, on the chat page: switch between the versions of an edited or
regenerated message and go on from an older one, search and jump to a message, rename, pin and
archive chats, export them — each checked against what the server stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Locator, Page, expect

from tests.browser.chat_page import (
    assistant_messages,
    message_box,
    open_as_guest,
    send,
    user_messages,
    wait_idle,
)
from tests.browser.conftest import Site


def api(page: Page, site: Site, path: str) -> Any:
    """What the server says, with the page's own token."""
    token = page.evaluate("() => localStorage.getItem('iris.token')")
    response = httpx.get(f"{site.base}{path}", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return response.json()


def session_id(page: Page) -> str:
    value: str = page.evaluate("() => JSON.parse(localStorage.getItem('iris.session.default'))")
    return value


def versions(message: Locator) -> Locator:
    return message.get_by_role("group", name="Version")


def edit_last(page: Page, text: str) -> None:
    user_messages(page).last.get_by_role("button", name="Edit").click()
    message_box(page).fill(text)
    message_box(page).press("Enter")
    wait_idle(page)


def test_switch_between_versions_and_continue_from_an_older_one(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "alpha")
    wait_idle(page)
    edit_last(page, "beta")
    expect(user_messages(page)).to_have_count(1)
    switcher = versions(user_messages(page).first)
    expect(switcher).to_contain_text("2/2")

    switcher.get_by_role("button", name="Previous version").click()
    expect(user_messages(page).first).to_contain_text("alpha")
    expect(assistant_messages(page).first).to_contain_text("You said: alpha")
    expect(versions(user_messages(page).first)).to_contain_text("1/2")
    # The keyboard stays on the switcher: the arrow keys move between versions.
    focused = page.locator(":focus")
    expect(focused).to_have_attribute("aria-label", "Next version")
    focused.press("ArrowRight")
    expect(user_messages(page).first).to_contain_text("beta")
    page.locator(":focus").press("ArrowLeft")
    expect(user_messages(page).first).to_contain_text("alpha")

    send(page, "gamma")  # goes on from the version shown
    wait_idle(page)
    expect(user_messages(page)).to_have_count(2)
    line = api(page, site, f"/api/agents/default/sessions/{session_id(page)}/messages")["messages"]
    assert [m["content"] for m in line if m["role"] == "user"] == ["alpha", "gamma"]
    page.reload()  # from the stored history: still the older version, with its switcher
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    expect(user_messages(page).first).to_contain_text("alpha")
    expect(versions(user_messages(page).first)).to_contain_text("1/2")


def test_a_regenerated_answer_switches_back_to_the_first(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "think of a number")
    wait_idle(page)
    first = assistant_messages(page).last.get_attribute("data-message-id")
    assistant_messages(page).last.get_by_role("button", name="Regenerate").click()
    wait_idle(page)
    answer = assistant_messages(page).last
    expect(versions(answer)).to_contain_text("2/2")
    versions(answer).get_by_role("button", name="Previous version").click()
    expect(assistant_messages(page).last).to_have_attribute("data-message-id", first or "")
    expect(versions(assistant_messages(page).last)).to_contain_text("1/2")


def test_search_jumps_to_the_message(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "the okapi lives in forests")
    wait_idle(page)
    target = session_id(page)
    wanted = user_messages(page).first.get_attribute("data-message-id")
    page.get_by_role("button", name="New chat").click()
    send(page, "something else entirely")
    wait_idle(page)

    box = page.get_by_role("searchbox", name="Search chats")
    box.fill("okap")
    results = page.get_by_role("list", name="Search results")
    expect(results.get_by_role("button")).not_to_have_count(0)
    expect(results.locator("mark").first).to_have_text("okapi")
    box.press("ArrowDown")
    expect(results.get_by_role("button").first).to_be_focused()
    page.locator(":focus").press("Enter")
    expect(user_messages(page).first).to_contain_text("the okapi lives in forests")
    assert session_id(page) == target
    expect(page.locator(f'[data-message-id="{wanted}"]')).to_be_in_viewport()
    expect(results).to_be_hidden()

    box.fill("nothing-like-this")
    expect(results).to_contain_text("Nothing found")
    box.press("Escape")
    expect(box).to_have_value("")
    expect(results).to_be_hidden()


def test_rename_pin_and_archive_from_the_session_menu(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "first chat")
    wait_idle(page)
    page.get_by_role("button", name="New chat").click()
    send(page, "second chat")
    wait_idle(page)
    sessions = page.get_by_role("navigation", name="Sessions").get_by_role("listitem")
    expect(sessions.nth(0)).to_contain_text("second chat")

    page.get_by_role("button", name="Actions for chat first chat").click()
    page.get_by_role("menuitem", name="Rename").click()
    title = page.get_by_role("textbox", name="New title")
    title.fill("Renamed chat")
    title.press("Enter")
    expect(sessions.nth(1)).to_contain_text("Renamed chat")

    menu = page.get_by_role("button", name="Actions for chat Renamed chat")
    menu.press("Enter")  # menus open from the keyboard too, and Esc closes them
    expect(page.get_by_role("menu")).to_be_visible()
    page.locator(":focus").press("Escape")
    expect(page.get_by_role("menu")).to_be_hidden()
    expect(menu).to_be_focused()

    menu.click()
    page.get_by_role("menuitem", name="Pin").click()
    expect(sessions.nth(0)).to_contain_text("Renamed chat")  # pinned first
    expect(sessions.nth(0).get_by_label("Pinned")).to_be_visible()
    listed = api(page, site, "/api/agents/default/sessions")["sessions"]
    assert [(s["title"], s["pinned"]) for s in listed] == [("Renamed chat", True), ("second chat", False)]

    page.get_by_role("button", name="Actions for chat second chat").click()
    page.get_by_role("menuitem", name="Archive").click()
    expect(sessions).to_have_count(1)
    page.get_by_role("button", name="Archived chats").click()
    expect(sessions).to_have_count(1)
    expect(sessions.first).to_contain_text("second chat")
    page.get_by_role("button", name="Back to chats").click()
    expect(sessions.first).to_contain_text("Renamed chat")


def test_export_downloads_json_and_markdown(page: Page, site: Site, tmp_path: Path) -> None:
    open_as_guest(page, site.base)
    send(page, "keep this one")
    wait_idle(page)
    for label, extension in (("Export as JSON", "json"), ("Export as Markdown", "md")):
        page.get_by_role("button", name="Actions for chat keep this one").click()
        with page.expect_download() as downloading:
            page.get_by_role("menuitem", name=label).click()
        download = downloading.value
        assert download.suggested_filename == f"iris-keep-this-one.{extension}"
        saved = tmp_path / download.suggested_filename
        download.save_as(saved)
        text = saved.read_text()
        if extension == "json":
            exported = json.loads(text)
            assert exported["session"]["id"] == session_id(page)
            assert exported["messages"][0]["content"] == "keep this one"
        else:
            assert text.startswith("# keep this one\n")
            assert "You said: keep this one" in text
