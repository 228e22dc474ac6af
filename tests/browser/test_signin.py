"""Signing in on the chat page: the token is kept across tabs and restarts (``localStorage``), a guest
stays the same guest in a new tab, an expired or refused token says so plainly (never "Signed in" beside
the sign-in controls), and Enter in the token field signs in."""

from __future__ import annotations

import datetime as dt

from playwright.sync_api import Page, expect

from iris.app.security.auth import issue_token
from tests.browser.chat_page import open_as_guest, send, user_messages, wait_idle
from tests.browser.conftest import JWT_SECRET, Site

EXPIRED = "Your session has expired — sign in again."


def test_a_new_tab_keeps_the_guest_and_their_chats(page: Page, site: Site) -> None:
    open_as_guest(page, site.base)
    send(page, "remember me in the next tab")
    wait_idle(page)
    token = page.evaluate("() => localStorage.getItem('iris.token')")

    second = page.context.new_page()  # a new tab of the same browser
    second.goto(site.base + "/")
    expect(second.get_by_role("button", name="Sign out")).to_be_visible()
    expect(second.get_by_text("Signed in as a guest")).to_be_visible()
    expect(second.get_by_role("button", name="Continue as guest")).to_be_hidden()
    assert second.evaluate("() => localStorage.getItem('iris.token')") == token  # the same guest
    chats = second.get_by_role("navigation", name="Sessions")
    expect(chats.get_by_role("button", name="remember me in the next tab", exact=True)).to_be_visible()
    expect(user_messages(second).first).to_contain_text("remember me in the next tab")

    second.get_by_role("button", name="Sign out").click()  # signing out in one tab signs out both
    expect(page.get_by_role("button", name="Continue as guest")).to_be_visible()
    expect(page.get_by_role("region", name="Account")).to_be_hidden()


def test_an_expired_token_asks_to_sign_in_again(page: Page, site: Site) -> None:
    stale = issue_token(JWT_SECRET, "bob", ttl=dt.timedelta(seconds=-60))
    page.goto(site.base + "/")
    page.evaluate("(value) => localStorage.setItem('iris.token', value)", stale)
    page.reload()
    expect(page.get_by_role("alert")).to_have_text(EXPIRED)
    expect(page.get_by_role("region", name="Sign in")).to_be_visible()
    expect(page.get_by_text("Signed in as bob")).to_be_hidden()
    expect(page.get_by_role("region", name="Account")).to_be_hidden()


def test_a_token_expiring_mid_session_says_so(page: Page, site: Site) -> None:
    short = issue_token(JWT_SECRET, "carol", ttl=dt.timedelta(seconds=4))
    page.goto(site.base + "/")
    page.get_by_label("Access token").fill(short)
    page.get_by_label("Access token").press("Enter")  # Enter submits the token field
    expect(page.get_by_text("Signed in as carol")).to_be_visible()
    expect(page.get_by_role("alert")).to_have_text(EXPIRED)  # within seconds, without a request failing
    expect(page.get_by_role("region", name="Sign in")).to_be_visible()
    expect(page.get_by_text("Signed in as carol")).to_be_hidden()
    expect(page.get_by_role("alert")).not_to_contain_text("missing_token")


def test_a_refused_token_never_shows_as_signed_in(page: Page, site: Site) -> None:
    forged = issue_token("another-secret-that-is-long-enough-for-hs256!!", "mallory")
    page.goto(site.base + "/")
    page.get_by_label("Access token").fill(forged)
    page.get_by_label("Access token").press("Enter")
    expect(page.get_by_role("alert")).not_to_be_empty()
    expect(page.get_by_role("region", name="Sign in")).to_be_visible()
    expect(page.get_by_text("Signed in as mallory")).to_be_hidden()
    assert page.evaluate("() => localStorage.getItem('iris.token')") is None
