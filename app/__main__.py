"""``python -m app`` / ``iris``: serve the API or print a dev token."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from app.auth import issue_token
from app.settings import Settings, SettingsError, load_settings, prepare


def _settings() -> Settings:
    try:
        return prepare(load_settings(os.environ))
    except SettingsError as exc:
        sys.exit(f"iris: {exc}")


def _token(args: argparse.Namespace) -> None:
    settings = _settings()
    assert settings.jwt_secret
    try:
        token = issue_token(settings.jwt_secret, args.user, role=args.role, audience=settings.jwt_audience)
    except ValueError as exc:
        sys.exit(f"iris: {exc}")
    print(token)


def _serve(_args: argparse.Namespace) -> None:
    import uvicorn

    from app.asgi import create_app

    settings = _settings()
    assert settings.jwt_secret
    base = f"http://{settings.host}:{settings.port}"
    token = issue_token(settings.jwt_secret, "dev", audience=settings.jwt_audience)
    print(f"Iris serving on {base}  (data: {settings.data_path.resolve()})")
    print(f"Chat page: {base}/   (try it in a browser)")
    print(f"API docs: {base}/schema/swagger   OpenAPI: {base}/schema/openapi.json")
    print(f"Dev token for user 'dev' (30 days):\n{token}", flush=True)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="info")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="iris", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the API (settings from IRIS_* variables)")
    serve.set_defaults(func=_serve)
    token = commands.add_parser("token", help="print a signed bearer token for USER")
    token.add_argument("user")
    token.add_argument("role", nargs="?", default="user", choices=["user", "admin", "guest"])
    token.set_defaults(func=_token)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
