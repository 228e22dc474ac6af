"""The chat page and the API docs are served by Iris itself, from files inside the package."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings

Client = AsyncTestClient[Litestar]


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(Settings(data_dir=str(tmp_path)), environ={})) as client:
        yield client


@pytest.mark.parametrize("path", ["/", "/chat/default", "/chat/another-agent"])
async def test_the_chat_page_is_served_at_the_root_and_per_agent(web: Client, path: str) -> None:
    response = await web.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/chat/app.js">' in response.text
    assert "http" not in response.text.replace('href="/schema/swagger"', "")  # no CDN, no absolute URL


@pytest.mark.parametrize(
    ("path", "kind"), [("app.js", "javascript"), ("api.js", "javascript"), ("chat.css", "css")]
)
async def test_the_pages_modules_are_served(web: Client, path: str, kind: str) -> None:
    response = await web.get(f"/static/chat/{path}")
    assert response.status_code == 200
    assert kind in response.headers["content-type"]


async def test_static_files_cannot_escape_their_folder(web: Client) -> None:
    response = await web.get("/static/chat/..%2F..%2Ferrors.py")  # app/errors.py: there, but out of bounds
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_the_docs_page_loads_swagger_ui_from_iris(web: Client) -> None:
    page = await web.get("/schema/swagger")
    assert page.status_code == 200
    assert "cdn.jsdelivr" not in page.text
    assert "https://" not in page.text
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-standalone-preset.js", "LICENSE"):
        response = await web.get(f"/static/swagger-ui/{asset}")
        assert response.status_code == 200, asset
        if asset != "LICENSE":
            assert f"/static/swagger-ui/{asset}" in page.text
