"""The attachment URL policy, table-tested: hostile and malformed URLs are refused by the right rule."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from iris.app.security.url_policy import AttachmentUrlRejected, UrlPolicy, check_attachment_url
from iris.app.settings import Settings
from iris.app.storage.tokens import TokenRejected, sign_object_token, verify_object_token
from iris.app.threads import thread_segment

SECRET = "policy-test-secret-0123456789abcdef0123456789"
USER = "alice"
THREAD = "0196a3f2-7c1e-7b3a-9d2e-5f8a1b2c3d4e"
OTHER_THREAD = "0196a3f2-7c1e-7b3a-9d2e-000000000000"
OBJECT = "3f2c1a9e-1111-4a2b-8c3d-0123456789ab.png"
HOST = "https://proj.supabase.co"
POLICY = UrlPolicy(scheme="https", host="proj.supabase.co", port=443, bucket="iris", token_secret=SECRET)


def _path(user: str = USER, thread: str = THREAD, name: str = OBJECT) -> str:
    return f"agent-inputs/{user}/{thread_segment(thread)}/uploads/{name}"


def _token(path: str, *, bucket: str = "iris", minutes: int = 24 * 60, secret: str = SECRET) -> str:
    # The URLs below are made at collection: they must outlive a whole suite run on a loaded machine.
    expires = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=minutes)
    return sign_object_token(secret, bucket, path, expires)


def url(path: str | None = None, *, base: str = HOST, bucket: str = "iris", token: str | None = None) -> str:
    """A signed URL; by default a valid one for alice's upload in THREAD."""
    path = path or _path()
    return f"{base}/storage/v1/object/sign/{bucket}/{path}?token={token or _token(path, bucket=bucket)}"


GOOD = url()
PATH_PART = f"/storage/v1/object/sign/iris/{_path()}"
TOKEN = _token(_path())

HOSTILE: list[tuple[str, object, str]] = [
    ("not a string (None)", None, "not_a_string"),
    ("not a string (int)", 42, "not_a_string"),
    ("not a string (dict)", {"url": GOOD}, "not_a_string"),
    ("overlong", GOOD + "&" + "a" * 3000, "too_long"),
    ("space inside", GOOD.replace("/uploads/", "/uploads /"), "control_characters"),
    ("newline", GOOD.replace("?token", "\n?token"), "control_characters"),
    ("NUL byte", GOOD.replace("?token", "\x00?token"), "control_characters"),
    ("non-ascii host", GOOD.replace("supabase", "supab\u0430se"), "control_characters"),
    ("backslash in path", GOOD.replace("/uploads/", "/uploads\\"), "backslash"),
    (
        "backslash host trick",
        "https://proj.supabase.co\\@evil.com" + PATH_PART + f"?token={TOKEN}",
        "backslash",
    ),
    ("fragment", GOOD + "#x", "fragment"),
    ("fragment before query", f"{HOST}{PATH_PART}#frag?token={TOKEN}", "fragment"),
    ("bad port", f"https://proj.supabase.co:99999{PATH_PART}?token={TOKEN}", "unparseable"),
    ("http downgrade", GOOD.replace("https://", "http://"), "scheme"),
    ("ftp", GOOD.replace("https://", "ftp://"), "scheme"),
    ("javascript", "javascript:alert(1)", "scheme"),
    ("data url", "data:image/png;base64,iVBORw0KGgo=", "scheme"),
    ("scheme-relative", f"//proj.supabase.co{PATH_PART}?token={TOKEN}", "scheme"),
    ("userinfo trick", f"https://proj.supabase.co@evil.com{PATH_PART}?token={TOKEN}", "userinfo"),
    ("userinfo with password", f"https://u:p@proj.supabase.co{PATH_PART}?token={TOKEN}", "userinfo"),
    ("other host", url(base="https://evil.com"), "host"),
    ("look-alike suffix", url(base="https://proj.supabase.co.evil.com"), "host"),
    ("look-alike prefix", url(base="https://evilproj.supabase.co"), "host"),
    ("sibling project", url(base="https://other.supabase.co"), "host"),
    ("trailing dot host", url(base="https://proj.supabase.co."), "host"),
    ("ip literal", url(base="https://127.0.0.1"), "host"),
    ("other port", url(base="https://proj.supabase.co:8443"), "port"),
    ("encoded slash", GOOD.replace("/uploads/", "/uploads%2F"), "encoded_separator"),
    ("encoded backslash", GOOD.replace("/uploads/", "/uploads%5c"), "encoded_separator"),
    ("double-encoded dots", GOOD.replace("/uploads/", "/uploads/%252e%252e/"), "double_encoding"),
    ("double-encoded slash", GOOD.replace("/uploads/", "/uploads%252F"), "double_encoding"),
    ("encoded NUL", GOOD.replace("/uploads/", "/uploads/%00"), "control_characters"),
    ("dot-dot segment", url(_path(name=f"../../bob/{THREAD}/uploads/{OBJECT}")), "dot_segment"),
    ("encoded dot-dot", GOOD.replace("/uploads/", "/uploads/%2e%2e/"), "dot_segment"),
    ("single dot", GOOD.replace("/uploads/", "/uploads/./"), "dot_segment"),
    ("double slash", GOOD.replace("/uploads/", "/uploads//"), "empty_segment"),
    ("trailing slash", f"{HOST}{PATH_PART}/?token={TOKEN}", "empty_segment"),
    ("public object path", GOOD.replace("/object/sign/", "/object/public/"), "path"),
    ("authenticated path", GOOD.replace("/object/sign/", "/object/authenticated/"), "path"),
    ("no path", f"{HOST}?token={TOKEN}", "path"),
    ("other bucket", url(bucket="other"), "bucket"),
    ("bucket case", url(bucket="IRIS"), "bucket"),
    ("other user's prefix", url(_path(user="bob")), "owner"),
    ("user prefix look-alike", url(_path(user="alice2")), "owner"),
    ("outside agent-inputs", url(f"avatars/{USER}/{OBJECT}"), "owner"),
    ("other thread's prefix", url(_path(thread=OTHER_THREAD)), "thread"),
    ("uppercase thread id", url(_path().replace(THREAD, THREAD.upper())), "thread"),
    ("not under uploads/", url(f"agent-inputs/{USER}/{THREAD}/derived/{OBJECT}"), "thread"),
    ("object name not ours", url(_path(name="cat.png")), "object_name"),
    ("nested object", url(_path(name=f"x/{OBJECT}")), "object_name"),
    ("svg object", url(_path(name=OBJECT.replace(".png", ".svg"))), "object_name"),
    ("extra query param", GOOD + "&download=1", "query"),
    ("two tokens", GOOD + f"&token={TOKEN}", "query"),
    ("missing token", f"{HOST}{PATH_PART}", "token_missing"),
    ("empty token", f"{HOST}{PATH_PART}?token=", "token_missing"),
    ("garbled token", f"{HOST}{PATH_PART}?token=abc.def.ghi", "token_malformed"),
    ("forged token", url(token=_token(_path(), secret="not-the-secret-0123456789abcdef01")), "token_invalid"),
    ("expired token", url(token=_token(_path(), minutes=-5)), "token_expired"),
    (
        "token for another path",
        url(token=_token(_path(name=OBJECT.replace("3f2c", "4f2c")))),
        "token_path_mismatch",
    ),
    ("token for another bucket", url(token=_token(_path(), bucket="other")), "token_path_mismatch"),
]


@pytest.mark.parametrize(("value", "rule"), [(v, r) for _, v, r in HOSTILE], ids=[n for n, _, _ in HOSTILE])
def test_hostile_urls_are_rejected_by_the_right_rule(value: object, rule: str) -> None:
    with pytest.raises(AttachmentUrlRejected) as caught:
        check_attachment_url(value, user_id=USER, thread_id=THREAD, policy=POLICY)
    assert caught.value.rule == rule
    assert caught.value.code == "attachment_url_rejected"
    assert caught.value.status_code == 422
    assert caught.value.extra == {"rule": rule}


def test_the_table_is_large_and_covers_every_rule() -> None:
    assert len(HOSTILE) >= 40
    rules = {rule for _, _, rule in HOSTILE}
    assert rules >= {"host", "userinfo", "port", "scheme", "bucket", "owner", "thread", "dot_segment"}


VALID = [
    ("canonical", GOOD, _path()),
    (
        "uppercase scheme and host",
        GOOD.replace("https://proj.supabase.co", "HTTPS://PROJ.SUPABASE.CO"),
        _path(),
    ),
    ("explicit default port", url(base="https://proj.supabase.co:443"), _path()),
    ("encoded object name", GOOD.replace(".png?", "%2Epng?"), _path()),
    ("jpeg", url(_path(name=OBJECT.replace(".png", ".jpg"))), _path(name=OBJECT.replace(".png", ".jpg"))),
    ("webp", url(_path(name=OBJECT.replace(".png", ".webp"))), _path(name=OBJECT.replace(".png", ".webp"))),
]


@pytest.mark.parametrize(("value", "path"), [(v, p) for _, v, p in VALID], ids=[n for n, _, _ in VALID])
def test_valid_urls_are_accepted(value: str, path: str) -> None:
    assert check_attachment_url(value, user_id=USER, thread_id=THREAD, policy=POLICY) == path


def test_without_a_secret_tokens_are_required_but_not_verified() -> None:
    policy = UrlPolicy(scheme="https", host="proj.supabase.co", port=443, bucket="iris", token_secret=None)
    forged = url(token=_token(_path(), secret="someone-elses-secret-0123456789abcd"))
    assert check_attachment_url(forged, user_id=USER, thread_id=THREAD, policy=policy) == _path()
    with pytest.raises(AttachmentUrlRejected) as caught:
        check_attachment_url(f"{HOST}{PATH_PART}", user_id=USER, thread_id=THREAD, policy=policy)
    assert caught.value.rule == "token_missing"


def test_policy_from_settings() -> None:
    local = UrlPolicy.from_settings(Settings(jwt_secret="s" * 40, public_url="http://127.0.0.1:8000"))
    assert (local.scheme, local.host, local.port, local.bucket) == ("http", "127.0.0.1", 8000, "iris")
    assert local.token_secret is not None
    remote = UrlPolicy.from_settings(
        Settings(
            storage="supabase", supabase_url="https://proj.supabase.co", storage_bucket="b", jwt_secret="x"
        )
    )
    assert (remote.scheme, remote.host, remote.port, remote.bucket, remote.token_secret) == (
        "https",
        "proj.supabase.co",
        443,
        "b",
        None,
    )
    with pytest.raises(ValueError, match="https"):
        UrlPolicy.from_settings(Settings(jwt_secret="s" * 40, public_url="http://iris.example.com"))


def test_http_is_accepted_only_for_a_loopback_public_url() -> None:
    policy = UrlPolicy(scheme="http", host="127.0.0.1", port=8000, bucket="iris", token_secret=SECRET)
    local_url = url(base="http://127.0.0.1:8000")
    assert check_attachment_url(local_url, user_id=USER, thread_id=THREAD, policy=policy) == _path()
    with pytest.raises(AttachmentUrlRejected) as caught:
        check_attachment_url(
            local_url.replace("http://", "https://"), user_id=USER, thread_id=THREAD, policy=policy
        )
    assert caught.value.rule == "scheme"


def test_an_opaque_thread_id_is_matched_by_its_storage_segment_only() -> None:
    thread = "Thread:ABC.1"
    path = _path(thread=thread)
    assert path.startswith(f"agent-inputs/{USER}/b32.")
    assert check_attachment_url(url(path), user_id=USER, thread_id=thread, policy=POLICY) == path
    for other in ("thread:abc.1", "Thread:ABC.2"):  # case matters; so does every character
        with pytest.raises(AttachmentUrlRejected) as caught:
            check_attachment_url(url(path), user_id=USER, thread_id=other, policy=POLICY)
        assert caught.value.rule == "thread"
    literal = f"agent-inputs/{USER}/{thread}/uploads/{OBJECT}"  # the raw id is never a segment
    with pytest.raises(AttachmentUrlRejected) as raw:
        check_attachment_url(url(literal), user_id=USER, thread_id=thread, policy=POLICY)
    assert raw.value.rule == "thread"


def test_a_remembered_object_token_is_still_refused_once_it_expires_or_for_another_path() -> None:
    expires_at = dt.datetime.fromtimestamp(int(time.time()) + 1, dt.UTC)
    token = sign_object_token(SECRET, "iris", "a/b.png", expires_at)
    verify_object_token(SECRET, token, "iris", "a/b.png")
    verify_object_token(SECRET, token, "iris", "a/b.png")  # remembered
    with pytest.raises(TokenRejected) as other:
        verify_object_token(SECRET, token, "iris", "a/c.png")
    assert other.value.reason == "path_mismatch"
    with pytest.raises(TokenRejected) as forged:
        verify_object_token("another-secret-" + "x" * 32, token, "iris", "a/b.png")
    assert forged.value.reason == "invalid"
    time.sleep(max(0.0, expires_at.timestamp() - time.time()) + 0.05)
    with pytest.raises(TokenRejected) as expired:
        verify_object_token(SECRET, token, "iris", "a/b.png")
    assert expired.value.reason == "expired"
