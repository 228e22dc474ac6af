"""Real PDFs and audio made in the tests: PDFs written object by object (text, image-only, encrypted with
the standard RC4 security handler, many pages, bombs), WAV with the ``wave`` module, MP3 as hand-built
MPEG-1 Layer III frames (silence, but every header a decoder reads is real)."""

from __future__ import annotations

import hashlib
import io
import os
import struct
import wave
import zlib
from collections.abc import Sequence

# --- PDF -------------------------------------------------------------------------------------------

_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")
_FILE_ID = bytes.fromhex("0123456789abcdef0123456789abcdef")


def _rc4(key: bytes, data: bytes) -> bytes:
    s = list(range(256))
    j = 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) % 256
        s[i], s[j] = s[j], s[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + s[i]) % 256
        s[i], s[j] = s[j], s[i]
        out.append(byte ^ s[(s[i] + s[j]) % 256])
    return bytes(out)


class _Rc4Security:
    """PDF standard security handler, revision 2 (40-bit RC4): enough for PDFium to need, or not need,
    a password."""

    permissions = -4

    def __init__(self, user_password: str, owner_password: str) -> None:
        user = (user_password.encode() + _PAD)[:32]
        owner = (owner_password.encode() + _PAD)[:32]
        self.o = _rc4(hashlib.md5(owner).digest()[:5], user)  # noqa: S324 - the PDF algorithm
        self.key = hashlib.md5(  # noqa: S324
            user + self.o + struct.pack("<i", self.permissions) + _FILE_ID
        ).digest()[:5]
        self.u = _rc4(self.key, _PAD)

    def encrypt(self, number: int, data: bytes) -> bytes:
        object_key = hashlib.md5(self.key + struct.pack("<I", number)[:3] + b"\0\0").digest()[:10]  # noqa: S324
        return _rc4(object_key, data)

    def dictionary(self) -> bytes:
        return (
            b"<< /Filter /Standard /V 1 /R 2 /O <"
            + self.o.hex().encode()
            + b"> /U <"
            + self.u.hex().encode()
            + b"> /P "
            + str(self.permissions).encode()
            + b" >>"
        )


def _escape(text: str) -> bytes:
    return text.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def text_content(lines: Sequence[str]) -> bytes:
    """A content stream that writes ``lines`` in Helvetica, one under another."""
    ops = [b"BT /F1 18 Tf 72 720 Td 22 TL"]
    ops += [b"(" + _escape(line) + b") Tj T*" for line in lines]
    return b"\n".join([*ops, b"ET"])


IMAGE_CONTENT = b"q 400 0 0 300 100 300 cm BI /W 2 /H 2 /CS /G /BPC 8 ID \x00\xff\xff\x00 EI Q"
"""A page that is one picture and no text (what a scan looks like to a reader)."""


def build_pdf(
    page_contents: Sequence[bytes],
    *,
    user_password: str | None = None,
    owner_password: str = "owner",  # noqa: S107 - a test file's password
    compress: bool = False,
    precompressed: bool = False,
    share_content: bool = False,
) -> bytes:
    """A PDF with one page per content stream.

    ``share_content``: every page draws the first stream (a 3,000-page file stays small);
    ``precompressed``: the contents are Flate data already; ``user_password`` set (``""`` = an owner
    password only): RC4-encrypted."""
    security = _Rc4Security(user_password, owner_password) if user_password is not None else None
    objects: dict[int, bytes] = {}
    count = len(page_contents)
    font = 3
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[font] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    next_number = 4
    kids = []
    streams: list[tuple[int, bytes]] = []
    shared: int | None = None
    for content in page_contents:
        page_number = next_number
        if share_content and shared is not None:
            content_number = shared
            next_number += 1
        else:
            content_number = next_number + 1
            next_number += 2
            streams.append((content_number, content))
            shared = content_number
        kids.append(page_number)
        objects[page_number] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >>"
            b" /Contents %d 0 R >>" % (font, content_number)
        )
    for number, content in streams:
        body = zlib.compress(content) if compress else content
        if security is not None:
            body = security.encrypt(number, body)
        flate = b" /Filter /FlateDecode" if compress or precompressed else b""
        objects[number] = b"<< /Length %d%s >>\nstream\n" % (len(body), flate) + body + b"\nendstream"
    objects[2] = (
        b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids) + b"] /Count %d >>" % count
    )
    encrypt_number = None
    if security is not None:
        encrypt_number = next_number
        objects[encrypt_number] = security.dictionary()
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += b"%010d 00000 n \n" % offsets[number] if number in offsets else b"0000000000 65535 f \n"
    trailer = b"<< /Size %d /Root 1 0 R /ID [<%s> <%s>]" % (
        size,
        _FILE_ID.hex().encode(),
        _FILE_ID.hex().encode(),
    )
    if encrypt_number is not None:
        trailer += b" /Encrypt %d 0 R" % encrypt_number
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def text_pdf(pages: Sequence[str], **kwargs: object) -> bytes:
    """A PDF whose page *i* says ``pages[i]`` (lines split on newlines)."""
    return build_pdf([text_content(page.split("\n")) for page in pages], **kwargs)  # type: ignore[arg-type]


def many_pages_pdf(count: int) -> bytes:
    return build_pdf([text_content(["the same page"])] * count, share_content=True)


def large_pdf(size_bytes: int, first_line: str = "Quarterly report") -> bytes:
    """A PDF of about ``size_bytes``: a page of text, then a page whose content stream carries the rest
    as a comment of random hex (as incompressible as a scan's pixels; a reader skips it)."""
    filler = b"% " + os.urandom(size_bytes // 2).hex().encode() + b"\n"
    return build_pdf([text_content([first_line]), filler + b"BT ET"])


def bomb_pdf(inflated_bytes: int) -> bytes:
    """One page whose Flate content stream inflates to ``inflated_bytes`` of spaces."""
    compressor = zlib.compressobj(1)  # level 1: a GiB of spaces compresses in about a second
    chunk = b" " * (1024 * 1024)
    body = (
        b"".join(compressor.compress(chunk) for _ in range(inflated_bytes // len(chunk))) + compressor.flush()
    )
    return build_pdf([body], precompressed=True)


# --- audio -----------------------------------------------------------------------------------------


def wav_bytes(seconds: float, *, rate: int = 8000, channels: int = 1, sample_width: int = 2) -> bytes:
    """A silent PCM WAV of ``seconds``."""
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(sample_width)
        writer.setframerate(rate)
        writer.writeframes(b"\0" * (int(seconds * rate) * channels * sample_width))
    return out.getvalue()


def wav_claiming(seconds_claimed: float, seconds_held: float, *, rate: int = 8000) -> bytes:
    """A WAV whose data chunk header claims ``seconds_claimed`` but which holds ``seconds_held``."""
    data = bytearray(wav_bytes(seconds_held, rate=rate))
    at = data.index(b"data") + 4
    struct.pack_into("<I", data, at, int(seconds_claimed * rate * 2))
    struct.pack_into("<I", data, 4, len(data) - 8)
    return bytes(data)


MP3_FRAME_SAMPLES = 1152
MP3_RATE = 44100
_MP3_HEADER = b"\xff\xfb\x90\x44"  # MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, no padding, joint stereo
_MP3_FRAME_BYTES = 417


def mp3_bytes(frames: int, *, xing_frames: int | None = None, id3: bool = True) -> bytes:
    """``frames`` silent MPEG-1 Layer III frames (``frames * 1152 / 44100`` s), after an ID3v2 tag;
    ``xing_frames`` adds a leading Xing frame that declares that many frames."""
    body = b"\0" * (_MP3_FRAME_BYTES - 4)
    out = bytearray()
    if id3:
        tag = b"TIT2" + struct.pack(">I", 6) + b"\0\0" + b"\x03test\0"
        size = len(tag)
        out += b"ID3\x03\x00\x00" + bytes(
            [(size >> 21) & 0x7F, (size >> 14) & 0x7F, (size >> 7) & 0x7F, size & 0x7F]
        )
        out += tag
    if xing_frames is not None:
        xing = bytearray(body)
        xing[32 : 32 + 12] = b"Xing" + struct.pack(">II", 1, xing_frames)
        out += _MP3_HEADER + xing
    for _ in range(frames):
        out += _MP3_HEADER + body
    return bytes(out)


def mp3_seconds(frames: int) -> float:
    return frames * MP3_FRAME_SAMPLES / MP3_RATE
