"""The built-in chat page and the API docs' assets: static files shipped inside the package.

The page (``app/api/static/``) is plain ES modules, no build step, and talks only to the public JSON API.
Swagger UI's files come from the ``swagger-ui-py`` wheel (Apache-2.0, its LICENSE ships beside them),
so ``/schema/swagger`` renders with no network.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from litestar import Controller, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.params import FromPath
from litestar.response import File
from litestar.static_files import create_static_files_router

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
SWAGGER_ASSETS = "/static/swagger-ui"


def swagger_ui_dir() -> Path:
    """Where the installed ``swagger_ui`` package keeps Swagger UI's dist (found without importing it)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("swagger-ui-py is not installed: the API docs page needs its assets")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def swagger_plugin() -> SwaggerRenderPlugin:
    """Swagger UI loading its scripts and styles from Iris itself, not from a CDN."""
    return SwaggerRenderPlugin(
        js_url=f"{SWAGGER_ASSETS}/swagger-ui-bundle.js",
        css_url=f"{SWAGGER_ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{SWAGGER_ASSETS}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{SWAGGER_ASSETS}/favicon-32x32.png'>",
    )


class ChatPageController(Controller):
    """``GET /`` and ``GET /chat/{agentSlug}``: the same single page; it reads the slug from the URL."""

    include_in_schema = False

    @get(["/", "/chat/{agent_slug:str}"], cache_control=CacheControlHeader(no_cache=True))
    async def page(self, agent_slug: FromPath[str] = "default") -> File:
        return File(
            STATIC_DIR / "index.html",
            media_type="text/html; charset=utf-8",
            content_disposition_type="inline",
        )


def static_routers() -> list[Router]:
    """The page's modules and styles, and Swagger UI's dist."""
    revalidate = CacheControlHeader(no_cache=True)  # small files; a new release must show at once
    return [
        create_static_files_router(
            path=SWAGGER_ASSETS, directories=[swagger_ui_dir()], name="swagger-ui", cache_control=revalidate
        ),
        create_static_files_router(
            path="/static/chat", directories=[STATIC_DIR], name="chat-page", cache_control=revalidate
        ),
    ]
