"""A fake Supabase Storage server: the storage-api endpoints Iris calls, answering as Supabase does.

It is a plain ASGI callable (no framework between the socket and the fake, so it sees streamed request
bodies chunk by chunk and can hang or fail on demand). Serve it with
:func:`tests.support.http_server.serve_asgi` and point :class:`iris.app.storage.supabase.SupabaseStorage` at
it.

Error conventions (what storage-api renders): a JSON body
``{"statusCode": "404", "code": "NoSuchKey", "error": "not_found", "message": "Object not found"}``.
storage-api sends every 4xx with HTTP status **400** and the real status only in the body's
``statusCode`` string; that is the default here (``status_style="supabase"``). With
``status_style="http"`` the HTTP status equals ``statusCode`` (409, 404, 403…), as older deployments and
some proxies answer. 5xx are always sent as themselves.

- bad or missing ``Authorization: Bearer <service_key>`` / ``apikey`` → ``statusCode "403"``,
  ``error "Unauthorized"``, ``message "invalid signature"``;
- unknown bucket → ``"404"`` / ``"Bucket not found"``; unknown object → ``"404"`` / ``"not_found"``;
- upload onto an existing object without ``x-upsert: true`` → ``"409"`` / ``"Duplicate"``;
- bad, expired or mismatched token on the public signed-URL route → always HTTP 400, ``"InvalidJWT"``;
- malformed JSON body → ``"400"`` / ``"InvalidRequest"``; unknown route → HTTP 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple
from urllib.parse import parse_qs

from iris.app.storage.tokens import TokenRejected, sign_object_token, verify_object_token
from tests.support.asgi import Receive, Scope, Send, read_request, send_response

API_PREFIX = "/storage/v1/object/"
DOWNLOAD_CHUNK = 64 * 1024
TOKEN_ERRORS = {
    "missing": "querystring must have required property 'token'",
    "invalid": "invalid signature",
    "expired": "jwt expired",
    "path_mismatch": "The url do not match the signature",
}


class StoredObject(NamedTuple):
    data: bytes
    content_type: str


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One request as the fake saw it (headers lower-cased; ``path`` percent-decoded, ``raw_path`` not)."""

    method: str
    path: str
    raw_path: str
    query: str
    headers: dict[str, str]
    body_size: int
    body_chunks: int
    """How many ASGI ``http.request`` messages carried the body (>1: it arrived in pieces)."""
    complete: bool
    """False when the client went away before finishing the body (nothing was stored then)."""
    json: Any = None
    """The parsed body when it was sent as ``application/json``."""


@dataclass(frozen=True)
class _Fault:
    kind: Literal["fail", "hang"]
    status: int = 500


@dataclass(frozen=True)
class _Answer:
    status: int
    body: bytes
    content_type: str = "application/json"


class FakeSupabase:
    """In-memory Supabase Storage for ``service_key``; signed URLs are JWTs under ``jwt_secret``."""

    def __init__(
        self,
        service_key: str,
        jwt_secret: str,
        buckets: Iterable[str],
        *,
        status_style: Literal["supabase", "http"] = "supabase",
    ) -> None:
        self.service_key = service_key
        self.jwt_secret = jwt_secret
        self.buckets = set(buckets)
        self.status_style = status_style
        self.objects: dict[tuple[str, str], StoredObject] = {}
        self.requests: list[RecordedRequest] = []
        self._faults: deque[_Fault] = deque()

    # -- test controls -------------------------------------------------------------------------------

    def fail_next(self, count: int = 1, *, status: int = 500) -> None:
        """The next ``count`` requests (any route) answer ``status`` with storage-api's 5xx body."""
        self._faults.extend(_Fault("fail", status) for _ in range(count))

    def hang_next(self, count: int = 1) -> None:
        """The next ``count`` requests read their body, then never answer (until the client disconnects)."""
        self._faults.extend(_Fault("hang") for _ in range(count))

    def requests_to(self, method: str, path: str) -> list[RecordedRequest]:
        """Recorded requests with this method and (decoded) path."""
        return [r for r in self.requests if r.method == method and r.path == path]

    # -- ASGI ----------------------------------------------------------------------------------------

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        incoming = await read_request(scope, receive)
        declared_json = incoming.headers.get("content-type", "").startswith("application/json")
        request = RecordedRequest(
            method=incoming.method,
            path=incoming.path,
            raw_path=incoming.raw_path,
            query=incoming.query,
            headers=incoming.headers,
            body_size=len(incoming.body),
            body_chunks=incoming.body_chunks,
            complete=incoming.complete,
            json=incoming.json if declared_json else None,
        )
        self.requests.append(request)
        if not incoming.complete:
            return
        fault = self._faults.popleft() if self._faults else None
        if fault is not None and fault.kind == "hang":
            await _until_disconnected(receive)
            return
        if fault is not None:
            answer = self._error(fault.status, "InternalError", "Internal", "Internal Server Error")
        else:
            answer = self._route(request, incoming.body)
        await _send(send, answer)

    # -- routing -------------------------------------------------------------------------------------

    def _route(self, request: RecordedRequest, body: bytes) -> _Answer:
        if not request.path.startswith(API_PREFIX):
            return self._no_route(request)
        rest = request.path[len(API_PREFIX) :]
        if request.method == "GET" and rest.startswith("sign/"):
            return self._public_download(request, rest.removeprefix("sign/"))
        if not self._authorized(request.headers):
            return self._error(403, "AccessDenied", "Unauthorized", "invalid signature")
        if request.method == "POST" and rest.startswith("sign/"):
            bucket, _, path = rest.removeprefix("sign/").partition("/")
            return self._sign_one(bucket, path, request) if path else self._sign_many(bucket, request)
        if request.method == "GET" and rest.startswith("authenticated/"):
            bucket, _, path = rest.removeprefix("authenticated/").partition("/")
            return self._download(bucket, path) if path else self._no_route(request)
        if request.method == "POST":
            bucket, _, path = rest.partition("/")
            return self._upload(bucket, path, request, body) if path else self._no_route(request)
        if request.method == "DELETE" and "/" not in rest:
            return self._delete(rest, request)
        return self._no_route(request)

    def _authorized(self, headers: dict[str, str]) -> bool:
        return (
            headers.get("authorization") == f"Bearer {self.service_key}"
            and headers.get("apikey") == self.service_key
        )

    # -- endpoints -----------------------------------------------------------------------------------

    def _upload(self, bucket: str, path: str, request: RecordedRequest, body: bytes) -> _Answer:
        if bucket not in self.buckets:
            return self._no_bucket()
        if (bucket, path) in self.objects and request.headers.get("x-upsert") != "true":
            return self._error(409, "KeyAlreadyExists", "Duplicate", "The resource already exists")
        content_type = request.headers.get("content-type", "text/plain;charset=UTF-8")
        self.objects[(bucket, path)] = StoredObject(body, content_type)
        return _json(200, {"Id": str(uuid.uuid4()), "Key": f"{bucket}/{path}"})

    def _download(self, bucket: str, path: str) -> _Answer:
        if bucket not in self.buckets:
            return self._no_bucket()
        stored = self.objects.get((bucket, path))
        if stored is None:
            return self._no_object()
        return _Answer(200, stored.data, stored.content_type)

    def _sign_one(self, bucket: str, path: str, request: RecordedRequest) -> _Answer:
        expires_in = _expires_in(request.json)
        if expires_in is None:
            return self._error(400, "InvalidRequest", "Bad Request", "body/expiresIn must be integer >= 1")
        if bucket not in self.buckets:
            return self._no_bucket()
        if (bucket, path) not in self.objects:
            return self._no_object()
        return _json(200, {"signedURL": self._signed_url(bucket, path, expires_in)})

    def _sign_many(self, bucket: str, request: RecordedRequest) -> _Answer:
        expires_in = _expires_in(request.json)
        paths = request.json.get("paths") if isinstance(request.json, dict) else None
        if expires_in is None or not isinstance(paths, list) or not paths or not _all_str(paths):
            return self._error(400, "InvalidRequest", "Bad Request", "body must have expiresIn and paths")
        if bucket not in self.buckets:
            return self._no_bucket()
        entries = []
        for path in paths:
            if (bucket, path) in self.objects:
                entries.append(
                    {"error": None, "path": path, "signedURL": self._signed_url(bucket, path, expires_in)}
                )
            else:
                error = "Either the object does not exist or you do not have access to it"
                entries.append({"error": error, "path": path, "signedURL": None})
        return _json(200, entries)

    def _public_download(self, request: RecordedRequest, rest: str) -> _Answer:
        """``GET /object/sign/{bucket}/{path}?token=…``: no headers needed, the token is the credential."""
        bucket, _, path = rest.partition("/")
        token = parse_qs(request.query).get("token", [None])[0]
        try:
            verify_object_token(self.jwt_secret, token, bucket, path)
        except TokenRejected as exc:
            message = TOKEN_ERRORS.get(exc.reason, "Invalid JWT")
            return _json(
                400, {"statusCode": "400", "code": "InvalidJWT", "error": "InvalidJWT", "message": message}
            )
        return self._download(bucket, path)

    def _delete(self, bucket: str, request: RecordedRequest) -> _Answer:
        prefixes = request.json.get("prefixes") if isinstance(request.json, dict) else None
        if not isinstance(prefixes, list) or not _all_str(prefixes):
            return self._error(
                400, "InvalidRequest", "Bad Request", "body must have required property 'prefixes'"
            )
        if bucket not in self.buckets:
            return self._no_bucket()
        deleted = []
        for path in prefixes:
            stored = self.objects.pop((bucket, path), None)
            if stored is not None:
                deleted.append(
                    {
                        "bucket_id": bucket,
                        "name": path,
                        "id": str(uuid.uuid4()),
                        "metadata": {"size": len(stored.data), "mimetype": stored.content_type},
                    }
                )
        return _json(200, deleted)

    # -- helpers -------------------------------------------------------------------------------------

    def _signed_url(self, bucket: str, path: str, expires_in: int) -> str:
        """Like storage-api: relative to ``/storage/v1``, with the path NOT percent-encoded."""
        expires_at = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=expires_in)
        token = sign_object_token(self.jwt_secret, bucket, path, expires_at)
        return f"/object/sign/{bucket}/{path}?token={token}"

    def _error(self, status: int, code: str, error: str, message: str) -> _Answer:
        sent = status if self.status_style == "http" or status >= 500 else 400
        return _json(sent, {"statusCode": str(status), "code": code, "error": error, "message": message})

    def _no_bucket(self) -> _Answer:
        return self._error(404, "NoSuchBucket", "Bucket not found", "Bucket not found")

    def _no_object(self) -> _Answer:
        return self._error(404, "NoSuchKey", "not_found", "Object not found")

    @staticmethod
    def _no_route(request: RecordedRequest) -> _Answer:
        message = f"Route {request.method}:{request.path} not found"
        return _json(404, {"statusCode": 404, "error": "Not Found", "message": message})


def _expires_in(body: Any) -> int | None:
    value = body.get("expiresIn") if isinstance(body, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def _all_str(items: list[Any]) -> bool:
    return all(isinstance(item, str) for item in items)


def _json(status: int, payload: Any) -> _Answer:
    return _Answer(status, json.dumps(payload).encode())


async def _send(send: Send, answer: _Answer) -> None:
    """The answer, its body in several pieces (as a real server streams a large object)."""
    headers = [
        (b"content-type", answer.content_type.encode("latin-1")),
        (b"content-length", str(len(answer.body)).encode()),
    ]
    await send_response(send, answer.status, headers, answer.body, piece_size=DOWNLOAD_CHUNK)


async def _until_disconnected(receive: Receive) -> None:
    """Block until the client gives up (its timeout), so a hung request never outlives the test."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(60):
            while (await receive())["type"] != "http.disconnect":
                pass
