"""Questions an MCP tool asks mid-call (elicitation) and the agent's MCP prompts, on the chat page: a
form built from the server's schema, filled and submitted, or declined (and kept over a reload); a page
to visit, then Done; a ``/`` command that starts the answer from a prompt; the form at a phone's width."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.chat_page import AXE, message_box, open_as_guest, send, serious, user_messages, wait_idle
from tests.browser.conftest import Site, patient

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VISIT_URL = "https://example.com/confirm-report"  # tests/support/mcp_server.py's visit_page


@pytest.fixture
def phone(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    patient(context)
    try:
        yield context.new_page()
    finally:
        context.close()


def test_a_tools_form_is_filled_and_submitted(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "use tool charts__book {}")
    wait_idle(page)
    question = page.get_by_role("region", name="A tool asks")
    expect(question).to_contain_text("Which room, for how many?")
    guests = question.get_by_label("Guests")
    expect(guests).to_have_value("2")  # the schema's default
    expect(guests).to_have_attribute("min", "1")
    expect(guests).to_have_attribute("max", "8")
    expect(guests).to_be_focused()  # the first field
    expect(guests).to_have_accessible_description("How many people")
    email = question.get_by_label("Email (required)")
    expect(email).to_have_attribute("type", "email")
    expect(question.get_by_label("Room (required)")).to_have_attribute("required", "")
    assert not AXE.exists() or serious(page) == [], "the form"
    question.get_by_role("button", name="Submit").click()
    expect(question).to_be_visible()  # the browser refused: required fields are empty
    email.fill("ada@example.com")
    question.get_by_label("Room (required)").select_option(label="tower")
    guests.fill("3")
    question.get_by_role("button", name="Submit").click()
    expect(question).to_be_hidden()
    wait_idle(page)
    answer = "booked the tower room for 3 (ada@example.com)"
    expect(page.get_by_label("Tool call charts__book")).to_contain_text(answer)


def test_a_declined_question_is_told_to_the_tool(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "use tool charts__ask_contact {}")
    wait_idle(page)
    question = page.get_by_role("region", name="A tool asks")
    expect(question).to_contain_text("Who should the report go to?")
    page.reload()  # the open question is kept with the chat
    expect(question).to_contain_text("Who should the report go to?")
    expect(question.get_by_label("Name (required)")).to_be_focused()
    expect(question.get_by_role("checkbox", name="Subscribe")).not_to_be_checked()
    question.get_by_role("button", name="Decline").click()
    wait_idle(page)
    expect(page.get_by_label("Tool call charts__ask_contact")).to_contain_text("the user chose decline")


def test_a_page_to_visit_then_done(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "use tool charts__visit_page {}")
    wait_idle(page)
    question = page.get_by_role("region", name="A tool asks")
    expect(question).to_contain_text("Confirm the report on its page.")
    link = question.get_by_role("link")
    expect(link).to_have_attribute("href", VISIT_URL)
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    question.get_by_role("button", name="Done").click()
    wait_idle(page)
    expect(page.get_by_label("Tool call charts__visit_page")).to_contain_text("the page visit ended: accept")


def test_a_slash_command_sends_a_prompt(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    message_box(page).press_sequentially("/chart")
    prompts = page.get_by_role("listbox", name="Prompts")
    option = prompts.get_by_role("option", name="/charts__chart_request")
    expect(option).to_be_visible()
    assert not AXE.exists() or serious(page) == [], "the prompts listed"
    message_box(page).press("Escape")
    expect(prompts).to_be_hidden()
    message_box(page).fill("")
    message_box(page).press_sequentially("/")
    expect(option).to_be_visible()
    message_box(page).press("Enter")  # the first (and only) prompt
    arguments = page.get_by_role("form", name="Prompt arguments")
    topic = arguments.get_by_label("topic (required)")
    expect(topic).to_be_focused()
    assert not AXE.exists() or serious(page) == [], "the prompt's arguments"
    topic.fill("rainfall")
    arguments.get_by_role("button", name="Send prompt").click()
    wait_idle(page)
    expect(user_messages(page).last).to_contain_text("Please draw a chart of rainfall.")


def test_the_form_fits_a_phone(phone: Page, site: Site) -> None:
    open_as_guest(phone, site.base)
    send(phone, "use tool charts__book {}")
    wait_idle(phone)
    question = phone.get_by_role("region", name="A tool asks")
    expect(question.get_by_role("button", name="Cancel")).to_be_visible()
    width: int = phone.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert width <= 0
    question.get_by_role("button", name="Cancel").click()
    wait_idle(phone)
    expect(phone.get_by_label("Tool call charts__book")).to_contain_text("the user chose cancel")
