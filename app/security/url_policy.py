"""The attachment URL policy (SPEC §4, seed 000 §4.1): the only way an inbound image URL is accepted.

An image URL in a message must be a signed URL of Iris's own storage, for an object the caller
uploaded into this very thread. :func:`check_attachment_url` applies every rule that needs no
database (pure, table-tested); :func:`resolve_attachment_url` adds the last one — the object is a
recorded upload — and returns that record. Nothing outside the policy is ever fetched.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import parse_qsl, unquote, urlsplit

import msgspec

from iris.app.errors import Unprocessable
from iris.app.mime import UPLOAD_EXTENSION_BY_MIME
from iris.app.persistence.models import Upload
from iris.app.persistence.repositories import UploadRepository
from iris.app.settings import Settings
from iris.app.storage.tokens import TokenRejected, derive_storage_secret, verify_object_token
from iris.app.threads import thread_segment

SIGN_PREFIX = "/storage/v1/object/sign/"
MAX_URL_LENGTH = 2048
_OBJECT_NAME = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\."
    f"({'|'.join(sorted(set(UPLOAD_EXTENSION_BY_MIME.values())))})$"
)
"""An upload's object name: a UUID and the extension of an accepted type (image, PDF, audio)."""
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_ENCODED_SEPARATOR = re.compile(r"%(2f|5c)", re.IGNORECASE)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class AttachmentUrlRejected(Unprocessable):
    """422 ``attachment_url_rejected``; ``rule`` names the check that failed."""

    def __init__(self, rule: str, detail: str, *, field: str | None = None) -> None:
        super().__init__(
            f"The image URL was rejected ({rule}): {detail}",
            code="attachment_url_rejected",
            field=field,
            extra={"rule": rule},
        )
        self.rule = rule


class UrlPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Where valid attachment URLs point, derived from the storage settings."""

    scheme: str
    host: str
    port: int
    bucket: str
    token_secret: str | None
    max_length: int = MAX_URL_LENGTH

    @classmethod
    def from_settings(cls, settings: Settings) -> UrlPolicy:
        """Local storage: Iris's public URL and its own storage secret; Supabase: the project URL, and
        token verification only when the project's JWT secret is configured."""
        if settings.storage == "supabase":
            if not settings.supabase_url:
                raise ValueError("IRIS_STORAGE=supabase needs IRIS_SUPABASE_URL")
            base, secret = settings.supabase_url, settings.supabase_jwt_secret
        else:
            assert settings.jwt_secret, "prepare() fills the secret"
            base, secret = settings.effective_public_url, derive_storage_secret(settings.jwt_secret)
        parts = urlsplit(base)
        scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
        if scheme == "http" and not _is_loopback(host):
            raise ValueError(
                f"attachment URLs must be https unless the storage host is loopback (got {base}; "
                "set IRIS_PUBLIC_URL, or IRIS_SUPABASE_URL for Supabase storage)"
            )
        return cls(
            scheme=scheme,
            host=host,
            port=parts.port or _DEFAULT_PORTS[scheme],
            bucket=settings.storage_bucket,
            token_secret=secret,
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")


def _has_control(text: str) -> bool:
    return _CONTROL_OR_SPACE.search(text) is not None


def check_attachment_url(value: object, *, user_id: str, thread_id: str, policy: UrlPolicy) -> str:
    """Every database-free rule, in order; returns the object path inside the bucket."""
    if not isinstance(value, str):
        raise AttachmentUrlRejected("not_a_string", "the URL must be a string")
    if len(value) > policy.max_length:
        raise AttachmentUrlRejected("too_long", f"longer than {policy.max_length} characters")
    if _has_control(value) or not value.isascii():
        raise AttachmentUrlRejected("control_characters", "whitespace, control or non-ASCII characters")
    if "\\" in value:
        raise AttachmentUrlRejected("backslash", "backslashes are not allowed")
    if "#" in value:
        raise AttachmentUrlRejected("fragment", "fragments are not allowed")
    try:
        url = urlsplit(value)
        port = url.port
    except ValueError as exc:
        raise AttachmentUrlRejected("unparseable", "not a valid URL") from exc
    if url.scheme.lower() != policy.scheme:
        raise AttachmentUrlRejected("scheme", f"must be {policy.scheme}://")
    if "@" in url.netloc:
        raise AttachmentUrlRejected("userinfo", "credentials in the URL are not allowed")
    if (url.hostname or "") != policy.host:
        raise AttachmentUrlRejected("host", "not this deployment's storage host")
    if (port or _DEFAULT_PORTS.get(policy.scheme)) != policy.port:
        raise AttachmentUrlRejected("port", "not this deployment's storage port")

    if _ENCODED_SEPARATOR.search(url.path):
        raise AttachmentUrlRejected("encoded_separator", "encoded slashes or backslashes in the path")
    path = unquote(url.path)  # once; anything still escaped was encoded twice
    if _PERCENT_ESCAPE.search(path):
        raise AttachmentUrlRejected("double_encoding", "the path is percent-encoded more than once")
    if _has_control(path) or "\\" in path or not path.isascii():
        raise AttachmentUrlRejected("control_characters", "the decoded path has forbidden characters")
    segments = path.split("/")[1:]
    if any(s in {".", ".."} for s in segments):
        raise AttachmentUrlRejected("dot_segment", "'.' and '..' segments are not allowed")
    if any(s == "" for s in segments):
        raise AttachmentUrlRejected("empty_segment", "empty path segments are not allowed")
    if not path.startswith(SIGN_PREFIX):
        raise AttachmentUrlRejected("path", f"the path must start with {SIGN_PREFIX}")
    bucket, _, object_path = path[len(SIGN_PREFIX) :].partition("/")
    if bucket != policy.bucket:
        raise AttachmentUrlRejected("bucket", "not this deployment's bucket")
    owner_prefix = f"agent-inputs/{user_id}/"
    thread_prefix = f"{owner_prefix}{thread_segment(thread_id)}/uploads/"
    if not object_path.startswith(owner_prefix):
        raise AttachmentUrlRejected("owner", "the object is not one of the caller's uploads")
    if not object_path.startswith(thread_prefix):
        raise AttachmentUrlRejected("thread", "the object was not uploaded for this thread")
    if not _OBJECT_NAME.fullmatch(object_path[len(thread_prefix) :]):
        raise AttachmentUrlRejected("object_name", "not an object name Iris issues")

    try:
        query = parse_qsl(url.query, keep_blank_values=True, strict_parsing=bool(url.query))
    except ValueError as exc:
        raise AttachmentUrlRejected("query", "the query string is malformed") from exc
    if any(key != "token" for key, _ in query) or len(query) > 1:
        raise AttachmentUrlRejected("query", "only a single 'token' parameter is allowed")
    token = query[0][1] if query else None
    if not token:
        raise AttachmentUrlRejected("token_missing", "the signed URL has no token")
    if policy.token_secret is not None:
        try:
            verify_object_token(policy.token_secret, token, bucket, object_path)
        except TokenRejected as exc:
            rule = "token_expired" if exc.reason == "expired" else f"token_{exc.reason}"
            raise AttachmentUrlRejected(rule, "the signed URL's token does not verify") from exc
    return object_path


async def resolve_attachment_url(
    value: object, *, user_id: str, thread_id: str, policy: UrlPolicy, uploads: UploadRepository
) -> Upload:
    """:func:`check_attachment_url`, then the object must be a recorded upload of this user and thread."""
    object_path = check_attachment_url(value, user_id=user_id, thread_id=thread_id, policy=policy)
    upload = await uploads.get_by_path(user_id, thread_id, policy.bucket, object_path)
    if upload is None:
        raise AttachmentUrlRejected("upload_unknown", "no such upload was recorded")
    return upload
