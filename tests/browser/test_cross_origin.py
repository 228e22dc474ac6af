"""Iris seen from other origins and with no network: CORS by ``IRIS_CORS_ORIGINS``, signed images in
an ``<img>`` anywhere, and the API docs page rendering from local assets only."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
from playwright.sync_api import Page, Route, expect

from tests.browser.chat_page import png
from tests.browser.conftest import Site
from tests.support.waits import REQUEST_SECONDS

_CALL = """async ([base, token]) => {
    try {
        const models = await fetch(base + "/api/agents/default/models");
        const sessions = await fetch(base + "/api/agents/default/sessions", {
            headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
        });
        return { ok: true, models: models.status, sessions: sessions.status, body: await sessions.json() };
    } catch (error) {
        return { ok: false, error: String(error) };
    }
}"""

_IMAGE = """(url) => new Promise((resolve) => {
    const img = new Image();
    img.onload = () => resolve(img.naturalWidth);
    img.onerror = () => resolve(-1);
    img.src = url;
    document.body.append(img);
})"""


def _guest(site: Site) -> str:
    token: str = httpx.post(f"{site.base}/api/auth/guest", timeout=REQUEST_SECONDS).json()["accessToken"]
    return token


def test_a_listed_origin_may_call_the_api_with_a_bearer_token(page: Page, site: Site) -> None:
    page.goto(site.allowed_origin + "/index.html")
    result: dict[str, Any] = page.evaluate(_CALL, [site.base, _guest(site)])
    assert result == {"ok": True, "models": 200, "sessions": 200, "body": {"sessions": []}}


def test_an_unlisted_origin_is_refused_by_the_browser(page: Page, site: Site) -> None:
    page.goto(site.denied_origin + "/index.html")
    result: dict[str, Any] = page.evaluate(_CALL, [site.base, _guest(site)])
    assert result["ok"] is False
    assert "Failed to fetch" in result["error"]


def test_a_signed_image_url_loads_in_an_img_on_any_origin(page: Page, site: Site) -> None:
    token = _guest(site)
    uploaded = httpx.post(
        f"{site.base}/api/files",
        files={"file": ("x.png", png((37, 11)), "image/png")},
        data={"threadId": "0190f3c0-0000-7000-8000-0000000000bb"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=REQUEST_SECONDS,
    ).json()
    for origin in (site.allowed_origin, site.denied_origin):  # bearer-less by design: no CORS needed
        page.goto(origin + "/index.html")
        assert page.evaluate(_IMAGE, uploaded["url"]) == 37


def test_the_api_docs_render_with_no_network(page: Page, site: Site) -> None:
    iris_host = urlsplit(site.base).netloc
    elsewhere: list[str] = []

    def offline(route: Route) -> None:
        if urlsplit(route.request.url).netloc == iris_host:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort("internetdisconnected")

    page.context.route("**/*", offline)
    page.goto(site.base + "/")
    page.get_by_role("link", name="API docs").click()
    expect(page).to_have_url(site.base + "/schema/swagger")
    expect(page.get_by_role("heading", name="Iris")).to_be_visible()
    expect(page.get_by_text("/api/agents/{slug}/chat").first).to_be_visible()
    assert elsewhere == []  # nothing was even attempted off the machine
