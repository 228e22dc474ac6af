"""What the local test model sees in an image, a PDF or an audio clip, so ``local/vision`` and
``local/multimodal`` prove they arrived.

Providers never import ``app``, so this does not reuse the upload side's parsers: PDFs are opened with
pypdfium2 directly (PDFium is not thread-safe, so every call holds one lock), and audio is measured by a
few header reads (WAV's ``fmt``/``data`` chunks; MP3's frame headers, walked to the end), which is all a
deterministic test model needs. The core has sniffed, bounded and measured the bytes already; a file
that still does not parse is described as such, never an error.

pypdfium2 is imported by the first PDF this model reads (on the worker thread ``iris.providers.local`` reads
media on), not with the module: every provider is imported at start-up, and PDFium's library and its
ctypes bindings would otherwise sit in every server process's memory for a test model's PDFs
(docs/adr/0002-peak-memory.md).
"""

from __future__ import annotations

import io
import struct
import threading

from PIL import Image

from iris.providers.messages import AudioPart, DocumentPart, ImagePart

_NAMED_COLOURS: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "grey": (128, 128, 128),
    "red": (220, 30, 30),
    "green": (30, 160, 60),
    "blue": (30, 60, 220),
    "yellow": (240, 220, 40),
    "orange": (245, 140, 30),
    "purple": (130, 50, 170),
    "pink": (245, 150, 190),
    "brown": (120, 70, 30),
    "cyan": (40, 200, 220),
}


def colour_name(rgb: tuple[int, int, int]) -> str:
    """The nearest of a dozen everyday colour names."""
    return min(
        _NAMED_COLOURS, key=lambda n: sum((a - b) ** 2 for a, b in zip(_NAMED_COLOURS[n], rgb, strict=True))
    )


SAMPLE_EDGE = 48
"""The colours are counted on the image shrunk to this many pixels a side."""


def describe_image(part: ImagePart, index: int) -> str:
    """Decode the bytes and say what they are: the proof that the image reached the model.

    A JPEG is decoded at the smallest of its built-in scales (1/2 to 1/8) still at least
    :data:`SAMPLE_EDGE` a side, and the shrink is a box average (each sample the mean of its block):
    a JPEG costs a tenth of a full decode with a bicubic shrink, a PNG about a quarter less. The
    leading colours are the same; shares may move by a few points, and where two colours meet their
    blend may be named third.
    """
    assert part.data is not None
    with Image.open(io.BytesIO(part.data)) as image:
        fmt = image.format or "unknown"
        width, height = image.size  # before draft(), which shrinks what the decoder reports
        image.draft("RGB", (SAMPLE_EDGE, SAMPLE_EDGE))
        small = image.convert("RGB").resize((SAMPLE_EDGE, SAMPLE_EDGE), Image.Resampling.BOX)
    counts: list[tuple[int, tuple[int, int, int]]] = sorted(
        small.quantize(colors=4).convert("RGB").getcolors(SAMPLE_EDGE * SAMPLE_EDGE) or [],  # type: ignore[arg-type]
        reverse=True,
    )
    total = sum(count for count, _ in counts) or 1
    colours = ", ".join(
        f"{colour_name(rgb)} #{rgb[0]:02x}{rgb[1]:02x}{rgb[2]:02x} {round(100 * count / total)}%"
        for count, rgb in counts[:3]
    )
    return f"Image {index}: {fmt}, {width}x{height} pixels, dominant colours: {colours}."


_PDFIUM = threading.Lock()
TEXT_PAGES = 5
"""How many pages the model looks through for a first line of text (a scan has none)."""


def describe_document(part: DocumentPart, index: int) -> str:
    """Its page count and the first line of its text: the proof that the document reached the model."""
    import pypdfium2 as pdfium  # on first use: see the module docstring

    label = f"Document {index}" + (f" ({part.name})" if part.name else "")
    try:
        pages, line = _read_pdf(part.data)
    except pdfium.PdfiumError as exc:
        return f"{label}: a PDF I could not open ({exc})."
    said = f'first line: "{line}"' if line else "no text on its first pages"
    return f"{label}: PDF, {pages} page{'s' if pages != 1 else ''}, {said}."


def _read_pdf(data: bytes) -> tuple[int, str]:
    import pypdfium2 as pdfium

    with _PDFIUM:
        pdf = pdfium.PdfDocument(data)
        try:
            pages = len(pdf)
            for number in range(min(pages, TEXT_PAGES)):
                page = pdf[number]
                text = page.get_textpage()
                try:
                    content = text.get_text_bounded()
                finally:
                    text.close()
                    page.close()
                line = next((ln.strip() for ln in content.splitlines() if ln.strip()), "")
                if line:
                    return pages, line[:200]
            return pages, ""
        finally:
            pdf.close()


def describe_audio(part: AudioPart, index: int) -> str:
    """Its format and duration, measured from the bytes themselves."""
    label = f"Audio {index}" + (f" ({part.name})" if part.name else "")
    if part.data[:4] == b"RIFF" and part.data[8:12] == b"WAVE":
        facts = _wav(part.data)
        fmt = "WAV"
    else:
        facts = _mp3(part.data)
        fmt = "MP3"
    if facts is None:
        return f"{label}: audio I could not read ({part.mime_type})."
    seconds, detail = facts
    return f"{label}: {fmt}, {seconds:.2f} seconds, {detail}."


def _wav(data: bytes) -> tuple[float, str] | None:
    """Seconds from the ``data`` chunk's size over the byte rate (never more than the bytes present)."""
    position, byte_rate, channels, rate = 12, 0, 0, 0
    while position + 8 <= len(data):
        chunk_id, size = data[position : position + 4], struct.unpack_from("<I", data, position + 4)[0]
        body = position + 8
        if chunk_id == b"fmt " and size >= 16 and body + 16 <= len(data):
            channels, rate, byte_rate = struct.unpack_from("<HII", data, body + 2)
        elif chunk_id == b"data" and byte_rate:
            present = min(size, len(data) - body)
            return present / byte_rate, f"{rate} Hz, {channels} channel{'s' if channels != 1 else ''}"
        position = body + size + (size & 1)
    return None


_MP3_BITRATES = {  # kbit/s by bitrate index: MPEG-1 Layer III, and MPEG-2/2.5 Layer III
    1: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    2: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
_XING = (b"Xing", b"Info")
_MP3_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


def _mp3(data: bytes) -> tuple[float, str] | None:
    """Seconds as the sum of every Layer III frame's samples, walking frame header to frame header."""
    position = 0
    if data[:3] == b"ID3" and len(data) >= 10:  # skip the tag: its size is four 7-bit bytes
        size = data[6] << 21 | data[7] << 14 | data[8] << 7 | data[9]
        position = 10 + size
    start = position
    seconds, frames, rate, bitrates = 0.0, 0, 0, set()
    while position + 4 <= len(data):
        header = struct.unpack_from(">I", data, position)[0]
        version, layer = (header >> 19) & 3, (header >> 17) & 3
        bitrate_index, rate_index = (header >> 12) & 15, (header >> 10) & 3
        if header >> 21 != 0x7FF or version == 1 or layer != 1 or bitrate_index in (0, 15) or rate_index == 3:
            break  # not a Layer III frame: the audio ends here (a trailing tag, or junk)
        rate = _MP3_RATES[version][rate_index]
        kbps = _MP3_BITRATES[1 if version == 3 else 2][bitrate_index]
        samples = 1152 if version == 3 else 576
        length = samples // 8 * kbps * 1000 // rate + ((header >> 9) & 1)
        first = position == start
        position += length
        if first and any(tag in data[position - length : position - length + 64] for tag in _XING):
            continue  # the Xing/Info frame describes the stream and holds no audio
        seconds += samples / rate
        frames += 1
        bitrates.add(kbps)
    if not frames:
        return None
    kind = f"{bitrates.pop()} kbit/s" if len(bitrates) == 1 else "variable bitrate"
    return seconds, f"{rate} Hz, {kind}"
