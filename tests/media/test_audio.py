"""WAV and MP3 read by our own parsers: the duration comes from what the file holds, never from a claim."""

from __future__ import annotations

import struct

import pytest

from iris.app.errors import Unprocessable
from iris.app.media.audio import inspect_audio, sniff_audio
from tests.support.documents import mp3_bytes, mp3_seconds, wav_bytes, wav_claiming


def refused(data: bytes, code: str, max_seconds: float = 600) -> str:
    with pytest.raises(Unprocessable) as caught:
        inspect_audio(data, max_seconds=max_seconds)
    assert caught.value.code == code, caught.value.detail
    return caught.value.detail


@pytest.mark.parametrize(("rate", "channels", "width"), [(8000, 1, 2), (44100, 2, 2), (16000, 1, 1)])
def test_wav_duration_and_format(rate: int, channels: int, width: int) -> None:
    facts = inspect_audio(wav_bytes(2.5, rate=rate, channels=channels, sample_width=width), max_seconds=600)
    assert (facts.mime_type, facts.format) == ("audio/wav", "wav")
    assert facts.duration_seconds == pytest.approx(2.5)
    assert (facts.sample_rate, facts.channels) == (rate, channels)


def test_a_wav_header_claiming_an_hour_is_refused() -> None:
    detail = refused(wav_claiming(3600, 1), "audio_undecodable")
    assert "3600.0 s" in detail


def test_a_wav_with_inconsistent_rates_is_refused() -> None:
    data = bytearray(wav_bytes(1))
    fmt = data.index(b"fmt ") + 8
    struct.pack_into("<I", data, fmt + 8, 1)  # byte rate 1: would make a second of audio last hours
    refused(bytes(data), "audio_undecodable")


def test_a_wav_without_data_is_refused() -> None:
    data = wav_bytes(1)
    refused(data[: data.index(b"data")], "audio_undecodable")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (wav_bytes(1e-6, rate=2_000_000_000), "2,000,000,000 Hz"),  # a header's claim: 2,000 frames, 1 µs
        (wav_bytes(0.5, rate=384_000), "384,000 Hz"),
        (wav_bytes(0.5, rate=4_000), "4,000 Hz"),
        (wav_bytes(0), "0 s"),
    ],
    ids=["2-GHz", "384-kHz", "4-kHz", "0-s"],
)
def test_rates_and_durations_no_vendor_takes_are_refused(data: bytes, said: str) -> None:
    assert said in refused(data, "audio_out_of_range")


@pytest.mark.parametrize("rate", [8_000, 192_000])
def test_the_rate_bounds_are_taken(rate: int) -> None:
    assert inspect_audio(wav_bytes(0.5, rate=rate), max_seconds=600).sample_rate == rate


def test_too_long_audio_is_refused() -> None:
    detail = refused(wav_bytes(3), "audio_too_long", max_seconds=2)
    assert "3.0 s" in detail


@pytest.mark.parametrize("id3", [True, False])
def test_mp3_duration_counts_the_frames(id3: bool) -> None:
    facts = inspect_audio(mp3_bytes(383, id3=id3), max_seconds=600)
    assert (facts.mime_type, facts.format) == ("audio/mpeg", "mp3")
    assert facts.duration_seconds == pytest.approx(mp3_seconds(383))
    assert (facts.sample_rate, facts.channels) == (44100, 2)


def test_an_honest_xing_header_is_not_audio() -> None:
    facts = inspect_audio(mp3_bytes(200, xing_frames=200), max_seconds=600)
    assert facts.duration_seconds == pytest.approx(mp3_seconds(200))


def test_a_lying_xing_header_is_refused() -> None:
    detail = refused(mp3_bytes(200, xing_frames=200 * 3600), "audio_undecodable")
    assert "720000 frames" in detail


def test_an_mp3_with_other_data_behind_it_is_refused() -> None:
    refused(mp3_bytes(10) + b"PK\x03\x04" + b"\x01" * 200_000, "audio_undecodable")


def test_a_truncated_last_frame_is_tolerated() -> None:
    facts = inspect_audio(mp3_bytes(50)[:-100], max_seconds=600)
    assert facts.duration_seconds == pytest.approx(mp3_seconds(49))


@pytest.mark.parametrize(
    "data",
    [
        b"RIFF\x00\x00\x00\x00WAVE",
        b"ID3\x03\x00\x00\x00\x00\x00\x05hello",
        b"\xff\xfb\x90\x44",
        b"OggS" + b"\0" * 100,
        b"",
    ],
    ids=["riff-only", "id3-only", "one-header", "ogg", "empty"],
)
def test_broken_audio_is_undecodable(data: bytes) -> None:
    refused(data, "audio_undecodable")


def test_sniffing_reads_the_bytes() -> None:
    assert sniff_audio(wav_bytes(0.1)[:16]) == "wav"
    assert sniff_audio(mp3_bytes(1)[:16]) == "mp3"
    assert sniff_audio(mp3_bytes(1, id3=False)[:16]) == "mp3"
    assert sniff_audio(b"%PDF-1.4") is None
