"""The agent picker: offered once the caller may use more than one agent; picking one opens that agent's
chat, with its own models and sessions."""

from __future__ import annotations

import re
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from iris.app.security.auth import issue_token
from tests.browser.chat_page import assistant_messages, open_as_guest, send, wait_idle
from tests.browser.conftest import JWT_SECRET, Site
from tests.support.waits import REQUEST_SECONDS

HELPDESK: dict[str, Any] = {
    "slug": "helpdesk",
    "name": "Helpdesk",
    "description": "Answers in plain text.",
    "models": ["local/text"],
    "guestAccess": True,
}
MEMBERS: dict[str, Any] = {"slug": "members", "name": "Members only", "models": ["local/vision"]}


def _define(site: Site, agent: dict[str, Any]) -> None:
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    created = httpx.post(f"{site.base}/api/agents", json=agent, headers=admin, timeout=REQUEST_SECONDS)
    assert created.status_code in (201, 409), created.text  # 409: another run of this module made it


def test_the_picker_shows_the_agents_a_guest_may_use_and_opens_their_chats(page: Page, site: Site) -> None:
    agent = page.get_by_role("combobox", name="Agent", exact=True)
    open_as_guest(page, site.base)
    if not httpx.get(f"{site.base}/api/agents/helpdesk/models", timeout=REQUEST_SECONDS).is_success:
        expect(agent).to_be_hidden()  # one agent: nothing to pick
    _define(site, HELPDESK)
    _define(site, MEMBERS)

    page.reload()  # still signed in (the token is kept for the tab)
    expect(agent).to_be_visible()
    expect(agent.get_by_role("option")).to_have_text(["Helpdesk", "Iris"])  # not the members' agent
    agent.select_option(label="Helpdesk")

    expect(page).to_have_url(re.compile(r"/chat/helpdesk$"))
    expect(page.get_by_role("heading")).to_have_text(re.compile("Helpdesk"))
    model = page.get_by_label("Model")
    expect(model.get_by_role("option")).to_have_text(["Local text (offline test model) (text)"])
    send(page, "hello helpdesk")
    wait_idle(page)
    expect(assistant_messages(page).last).to_contain_text("hello helpdesk")
    token = page.evaluate("() => localStorage.getItem('iris.token')")
    bearer = {"Authorization": f"Bearer {token}"}
    listed = httpx.get(f"{site.base}/api/agents/helpdesk/sessions", headers=bearer, timeout=REQUEST_SECONDS)
    sessions = listed.json()["sessions"]
    assert [s["title"] for s in sessions] == ["hello helpdesk"]  # the chat is the helpdesk's

    agent.select_option(label="Iris")
    expect(page).to_have_url(re.compile(r"/chat/default$"))
    expect(page.get_by_role("list", name="Sessions").get_by_text("hello helpdesk")).to_have_count(0)
