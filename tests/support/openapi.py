"""Keeps the OpenAPI document honest: every problem a test provokes through the ``client`` fixture must
be documented for its operation, with its status and its ``code``."""

from __future__ import annotations

import functools
import re
import tempfile
from typing import Any

import httpx
import msgspec

from iris.app.api.problems import PROBLEM_JSON
from iris.app.asgi import create_app
from iris.app.settings import Settings

_METHODS = ("get", "put", "post", "delete", "patch")


@functools.cache
def document() -> dict[str, Any]:
    """The document as served (it does not depend on settings)."""
    with tempfile.TemporaryDirectory() as data_dir:
        app = create_app(Settings(data_dir=data_dir, jwt_secret="s" * 40), environ={})
        schema: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(app.openapi_schema.to_schema()))
    return schema


@functools.cache
def _operations() -> list[tuple[re.Pattern[str], str, dict[str, set[str]]]]:
    """(path pattern, method, status → codes), paths without parameters first."""
    out = []
    for path, item in sorted(document()["paths"].items(), key=lambda p: p[0].count("{")):
        for method in _METHODS:
            if method in item:
                pattern = _pattern(path, item[method])
                codes = {
                    status: set(_codes(answer["content"][PROBLEM_JSON]["schema"]))
                    for status, answer in item[method]["responses"].items()
                    if PROBLEM_JSON in answer.get("content", {})
                }
                out.append((re.compile(pattern + "$"), method.upper(), codes))
    return out


def _codes(schema: dict[str, Any]) -> list[str]:
    codes: list[str] = schema["allOf"][1]["properties"]["code"]["enum"]
    return codes


_UUID = "[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"


def _pattern(path: str, operation: dict[str, Any]) -> str:
    """What the router matches: ``{objectPath}`` spans segments, a ``uuid`` parameter only a UUID."""
    kinds = {
        p["name"]: p["schema"].get("format") for p in operation.get("parameters", []) if p["in"] == "path"
    }
    pattern = re.escape(path)
    for name, kind in kinds.items():
        value = ".+" if name == "objectPath" else _UUID if kind == "uuid" else "[^/]+"
        pattern = pattern.replace(re.escape("{" + name + "}"), value)
    return pattern


class ProblemLog:
    """An httpx response hook that notes every problem+json answer."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int, str]] = []

    async def __call__(self, response: httpx.Response) -> None:
        if response.headers.get("content-type") == PROBLEM_JSON:
            await response.aread()
            code = str(response.json().get("code"))
            self.seen.append((response.request.method, response.request.url.path, response.status_code, code))

    def undocumented(self) -> list[str]:
        """Problems answered but not documented for the operation (routes Iris does not have are skipped)."""
        found = []
        for method, path, status, code in self.seen:
            operation = next(
                (codes for pattern, m, codes in _operations() if m == method and pattern.match(path)), None
            )
            if operation is not None and code not in operation.get(str(status), set()):
                found.append(f"{method} {path} answered {status} {code}")
        return found
