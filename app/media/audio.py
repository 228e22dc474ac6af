"""What an audio file is and how long it plays, read from its own structure (never its name, declared
type or a single header field): WAV from its RIFF chunks, MP3 by walking every MPEG frame.

Our own small parsers on purpose (ADR 0014): mutagen is GPL and tinytag takes a header's
word for the duration. A file that claims more than it holds is refused, not believed.
Blocking and CPU-bound (an MP3 is walked frame by frame): run it in a worker thread.
"""

from __future__ import annotations

import struct
from typing import Literal

import msgspec

from iris.app.errors import Unprocessable

MIN_SAMPLE_RATE = 8_000
"""The lowest sample rate taken: telephone audio, and MP3's lowest (MPEG-2.5)."""
MAX_SAMPLE_RATE = 192_000
"""The highest sample rate taken: studio audio. No vendor documents a rate; beyond these a file is a
header's claim, not a recording (a 2 GHz WAV plays for a nanosecond)."""
MP3_TRAILER_SLACK_BYTES = 128 * 1024
"""What may follow an MP3's last frame (an ID3v1 or APE tag, padding) before the file counts as
something else with an MP3 in front."""


class AudioFacts(msgspec.Struct, frozen=True, kw_only=True):
    mime_type: str
    format: Literal["wav", "mp3"]
    duration_seconds: float
    sample_rate: int
    channels: int


def _undecodable(detail: str) -> Unprocessable:
    return Unprocessable(detail, code="audio_undecodable", field="file")


def sniff_audio(head: bytes) -> Literal["wav", "mp3"] | None:
    """The audio format the first bytes announce, or ``None`` (only a hint: :func:`inspect_audio`
    checks the whole file)."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head[:3] == b"ID3" or _frame_header(head, 0) is not None:
        return "mp3"
    return None


def inspect_audio(data: bytes, *, max_seconds: float) -> AudioFacts:
    """Parse ``data`` as WAV or MP3: 422 ``audio_undecodable`` when it is neither or lies about its
    length, ``audio_out_of_range`` for a sample rate outside :data:`MIN_SAMPLE_RATE`-
    :data:`MAX_SAMPLE_RATE` or no sound at all (0 s), ``audio_too_long`` past ``max_seconds``."""
    kind = sniff_audio(data[:16])
    if kind == "wav":
        facts = _wav(data)
    elif kind == "mp3":
        facts = _mp3(data)
    else:
        raise _undecodable("The file is neither WAV nor MP3 audio.")
    _check_range(facts)
    if facts.duration_seconds > max_seconds:
        raise Unprocessable(
            f"The audio plays for {facts.duration_seconds:.1f} s; at most {max_seconds:g} s are accepted.",
            code="audio_too_long",
            field="file",
        )
    return facts


def _check_range(facts: AudioFacts) -> None:
    """422 ``audio_out_of_range`` for a sample rate no recording has, or audio that plays for 0 s."""
    if not MIN_SAMPLE_RATE <= facts.sample_rate <= MAX_SAMPLE_RATE:
        raise Unprocessable(
            f"The audio's sample rate is {facts.sample_rate:,} Hz; {MIN_SAMPLE_RATE:,} to"
            f" {MAX_SAMPLE_RATE:,} Hz are accepted.",
            code="audio_out_of_range",
            field="file",
        )
    if facts.duration_seconds <= 0:
        raise Unprocessable(
            "The audio holds no sound (it plays for 0 s).", code="audio_out_of_range", field="file"
        )


# --- WAV -------------------------------------------------------------------------------------------

_WAV_FORMATS = {1, 3, 6, 7, 0xFFFE}  # PCM, IEEE float, A-law, mu-law, extensible


def _wav(data: bytes) -> AudioFacts:
    if len(data) < 12:
        raise _undecodable("The WAV file is truncated.")
    offset = 12
    fmt: tuple[int, int, int, int, int] | None = None
    while offset + 8 <= len(data):
        chunk_id = data[offset : offset + 4]
        (size,) = struct.unpack_from("<I", data, offset + 4)
        body = offset + 8
        if chunk_id == b"fmt ":
            if size < 16 or body + size > len(data):
                raise _undecodable("The WAV file's format chunk is truncated.")
            audio_format, channels, sample_rate, byte_rate, block_align = struct.unpack_from(
                "<HHIIH", data, body
            )
            fmt = (audio_format, channels, sample_rate, byte_rate, block_align)
        elif chunk_id == b"data":
            if fmt is None:
                raise _undecodable("The WAV file has audio data before its format chunk.")
            return _wav_facts(fmt, size, available=len(data) - body)
        offset = body + size + (size & 1)  # chunks are word-aligned
    raise _undecodable("The WAV file has no audio data chunk.")


def _wav_facts(fmt: tuple[int, int, int, int, int], size: int, *, available: int) -> AudioFacts:
    audio_format, channels, sample_rate, byte_rate, block_align = fmt
    if audio_format not in _WAV_FORMATS:
        raise _undecodable(f"The WAV file uses an encoding Iris does not take (format {audio_format:#x}).")
    if not (channels and sample_rate and byte_rate and block_align) or byte_rate != sample_rate * block_align:
        raise _undecodable("The WAV file's format chunk is inconsistent (rates, channels or block size).")
    if size > available:
        raise _undecodable(
            f"The WAV header claims {size} bytes of audio ({size / byte_rate:.1f} s) but the file holds"
            f" {available}."
        )
    return AudioFacts(
        mime_type="audio/wav",
        format="wav",
        duration_seconds=size / byte_rate,
        sample_rate=sample_rate,
        channels=channels,
    )


# --- MP3 -------------------------------------------------------------------------------------------

# Kbit/s by bitrate index, for MPEG-1 Layer III and MPEG-2/2.5 Layer III.
_BITRATES_V1 = (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320)
_BITRATES_V2 = (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160)
_SAMPLE_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


class _Frame(msgspec.Struct, frozen=True):
    length: int
    samples: int
    sample_rate: int
    channels: int
    version: int  # 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5


def _frame_header(data: bytes, offset: int) -> _Frame | None:
    """The MPEG Layer III frame whose header starts at ``offset``, or ``None``."""
    if offset + 4 > len(data):
        return None
    b1, b2, b3, b4 = data[offset : offset + 4]
    if b1 != 0xFF or b2 & 0xE0 != 0xE0:
        return None
    version, layer = (b2 >> 3) & 3, (b2 >> 1) & 3
    bitrate_index, rate_index, padding = b3 >> 4, (b3 >> 2) & 3, (b3 >> 1) & 1
    if version == 1 or layer != 1 or bitrate_index in (0, 15) or rate_index == 3:
        return None  # reserved version, not Layer III, free-format or bad bitrate, reserved rate
    sample_rate = _SAMPLE_RATES[version][rate_index]
    channels = 1 if b4 >> 6 == 3 else 2
    if version == 3:
        kbps, samples = _BITRATES_V1[bitrate_index], 1152
        length = 144_000 * kbps // sample_rate + padding
    else:
        kbps, samples = _BITRATES_V2[bitrate_index], 576
        length = 72_000 * kbps // sample_rate + padding
    return _Frame(length, samples, sample_rate, channels, version)


def _skip_id3v2(data: bytes) -> int:
    if data[:3] != b"ID3" or len(data) < 10:
        return 0
    size_bytes = data[6:10]
    if any(b & 0x80 for b in size_bytes):
        raise _undecodable("The MP3 file's ID3 tag header is malformed.")
    size = (size_bytes[0] << 21) | (size_bytes[1] << 14) | (size_bytes[2] << 7) | size_bytes[3]
    footer = 10 if data[5] & 0x10 else 0
    end = 10 + size + footer
    if end > len(data):
        raise _undecodable("The MP3 file's ID3 tag claims more bytes than the file holds.")
    return end


def _declared_frames(data: bytes, offset: int, frame: _Frame) -> int | None:
    """The frame count a Xing/Info or VBRI header in the first frame declares (that frame excluded),
    or ``None`` when there is none."""
    mono = frame.channels == 1
    side = (17 if mono else 32) if frame.version == 3 else (9 if mono else 17)  # side-information bytes
    xing = offset + 4 + side
    if data[xing : xing + 4] in (b"Xing", b"Info") and xing + 12 <= len(data):
        (flags,) = struct.unpack_from(">I", data, xing + 4)
        if flags & 1:
            return int(struct.unpack_from(">I", data, xing + 8)[0])
        return None
    vbri = offset + 36
    if data[vbri : vbri + 4] == b"VBRI" and vbri + 18 <= len(data):
        return int(struct.unpack_from(">I", data, vbri + 14)[0])
    return None


def _mp3(data: bytes) -> AudioFacts:
    start = _skip_id3v2(data)
    first = _frame_header(data, start)
    if first is None:
        raise _undecodable("The MP3 file has no MPEG audio frame where its audio should start.")
    declared = _declared_frames(data, start, first)
    offset, frames, samples = start, 0, 0
    while (frame := _frame_header(data, offset)) is not None and offset + frame.length <= len(data):
        if frame.sample_rate != first.sample_rate or frame.version != first.version:
            raise _undecodable("The MP3 file changes its sample rate mid-stream.")
        frames += 1
        samples += frame.samples
        offset += frame.length
    if declared is not None:
        frames -= 1  # the Xing/VBRI frame carries no audio
        samples -= first.samples
        if abs(declared - frames) > max(2, frames // 100):
            raise _undecodable(f"The MP3 file's header claims {declared} frames but the file holds {frames}.")
    if frames < 1 or (declared is None and frames < 2):
        raise _undecodable("The MP3 file holds no complete run of MPEG audio frames.")
    trailer = len(data) - offset
    if trailer > MP3_TRAILER_SLACK_BYTES:
        raise _undecodable(f"{trailer} bytes after the MP3 file's last audio frame are not MPEG audio.")
    return AudioFacts(
        mime_type="audio/mpeg",
        format="mp3",
        duration_seconds=samples / first.sample_rate,
        sample_rate=first.sample_rate,
        channels=first.channels,
    )
