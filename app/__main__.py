"""``python -m iris`` / ``iris``: serve the API, print a dev token, check or sync the models."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging.config
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from iris.app.security.auth import issue_token
from iris.app.settings import Settings, SettingsError, load_settings, prepare


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


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a port in use is one clear line, not a uvicorn traceback."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: restarts need no wait
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = "the port is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        sys.exit(f"iris: cannot listen on {host}:{port}: {reason} (set IRIS_HOST / IRIS_PORT)")
    sock.set_inheritable(True)
    return sock


def _serve(_args: argparse.Namespace) -> None:
    import uvicorn

    from iris.app.asgi import create_app
    from iris.app.telemetry.logs import log_config

    settings = _settings()
    assert settings.jwt_secret
    sock = _listen(settings.host, settings.port)
    _migrate_embedded(settings)
    logging.config.dictConfig(log_config(settings))  # before anything logs; uvicorn's loggers too
    app = create_app(settings)
    base = settings.effective_public_url.rstrip("/")
    token = issue_token(settings.jwt_secret, "dev", audience=settings.jwt_audience)
    print(f"Iris serving on {settings.host}:{settings.port}  (data: {settings.data_path.resolve()})")
    print(f"Chat page: {base}/   (try it in a browser)")
    print(f"API docs: {base}/schema/swagger   OpenAPI: {base}/schema/openapi.json")
    print(f"Dev token for user 'dev' (30 days):\n{token}", flush=True)
    config = uvicorn.Config(app, log_config=None, log_level=settings.log_level)
    uvicorn.Server(config).run(sockets=[sock])


def _migrate_embedded(settings: Settings) -> None:
    """On SQLite, the database inside this process, ``serve`` migrates it to head itself, as `just run`
    does, and says so. PostgreSQL is shared and migrated deliberately (`alembic upgrade head`): a process
    on one that is behind answers 503 ``migrations_pending`` until it is."""
    from iris.app.persistence.migrations import head_revisions, upgrade_to_head

    url = settings.effective_database_url
    if not url.startswith("sqlite"):
        return
    try:
        before = upgrade_to_head(url)
    except Exception as exc:  # any failure is one line, and the process does not start
        sys.exit(f"iris: could not migrate the SQLite database {url}: {type(exc).__name__}: {exc}")
    if before is not None:
        start = ", ".join(sorted(before)) or "an empty database"
        print(
            f"Migrated the SQLite database from {start} to {', '.join(sorted(head_revisions()))}", flush=True
        )


def _models_check(args: argparse.Namespace) -> None:
    from iris.app.asgi import build_registry
    from iris.app.catalogue.check import check_models, table
    from iris.app.persistence.db import create_alchemy_config
    from iris.app.vendor_http import vendor_http_client

    settings = _settings()

    async def check() -> bool:
        alchemy = create_alchemy_config(settings)
        async with vendor_http_client(http2=settings.vendor_http2) as http:
            registry = build_registry(settings, os.environ, http)
            try:
                results = await check_models(
                    alchemy,
                    registry,
                    args.refs,
                    progress=lambda line: print(line, flush=True),
                    seconds_allowed=args.timeout,
                )
            finally:
                await alchemy.get_engine().dispose()
        print()
        print(table(results))
        return all(r.ok for r in results)

    sys.exit(0 if asyncio.run(check()) else 1)


def _models_sync(args: argparse.Namespace) -> None:
    from iris.app.asgi import build_registry, build_tool_directory
    from iris.app.catalogue.defaults import seed_catalogue
    from iris.app.catalogue.models_file import ModelsFileError, apply_models_file, describe, load_models_file
    from iris.app.persistence.db import create_alchemy_config
    from iris.app.vendor_http import vendor_http_client

    settings = _settings()

    async def sync() -> str:
        alchemy = create_alchemy_config(settings)
        async with vendor_http_client(http2=settings.vendor_http2) as http:
            try:
                registry = build_registry(settings, os.environ, http)
                await registry.ready()
                tools = build_tool_directory()
                spec = load_models_file(Path(args.file), registry, tools)
                await seed_catalogue(alchemy)  # as at start-up: the defaults first, then the file
                return describe(await apply_models_file(alchemy, spec, tools))
            finally:
                await alchemy.get_engine().dispose()

    try:
        print(asyncio.run(sync()))
    except ModelsFileError as exc:
        sys.exit(f"iris: {exc}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="iris", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the API (settings from IRIS_* variables)")
    serve.set_defaults(func=_serve)
    token = commands.add_parser("token", help="print a signed bearer token for USER")
    token.add_argument("user")
    token.add_argument("role", nargs="?", default="user", choices=["user", "admin", "guest"])
    token.set_defaults(func=_token)
    models = commands.add_parser("models", help="check or sync the model catalogue").add_subparsers(
        dest="models_command", required=True
    )
    check = models.add_parser(
        "check", help="send a tiny request to each enabled model (or REF…); exit 1 on any failure"
    )
    check.add_argument(
        "refs", nargs="*", metavar="REF", help="provider/modelId or id (default: every enabled model)"
    )
    check.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per model (default 60)")
    check.set_defaults(func=_models_check)
    sync = models.add_parser("sync", help="apply a models file (TOML) now and print what changed")
    sync.add_argument("file")
    sync.set_defaults(func=_models_sync)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
