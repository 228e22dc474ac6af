"""``python -m iris models check``: one tiny real request to each model, to find a bad key or URL before
a user does.

Each enabled model (or each one named) gets a short text prompt and, when it takes images, a small
Pillow-made PNG, through its provider exactly as a run would send them (inline bytes). The answer is
read to its end; the time to the first streamed token is reported. Nothing is stored.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from PIL import Image

from iris.app.catalogue.views import effective_capabilities, key_hint, missing_key, model_spec
from iris.app.persistence.db import session_scope
from iris.app.persistence.models import ModelRow
from iris.app.persistence.repositories import ModelRepository
from iris.providers import (
    ImagePart,
    Message,
    NoSuchProvider,
    ProviderError,
    RequestOptions,
    TextDelta,
    TextPart,
    ToolCallStart,
    UnsupportedPartError,
)
from iris.providers.registry import ProviderRegistry

PROMPT = "This is a connectivity check. Reply with the single word: ok."
IMAGE_PROMPT = "This is a connectivity check. Name the colour of this square in one word."
MAX_OUTPUT_TOKENS = 32

_HINTS = {
    "rate_limit": "the vendor is rate-limiting this key; try again later",
    "bad_request": "the vendor refused the request: check the modelId and the model's options",
    "unavailable": "the vendor could not be reached or failed: check baseUrl and the network",
    "could_not_fetch_image": "the vendor could not take the test image",
    "other": "the vendor failed; see the message",
}


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One model's outcome: ``code`` and ``hint`` only when it failed."""

    ref: str
    ok: bool
    first_token_ms: int | None = None
    code: str | None = None
    hint: str | None = None


def probe_image() -> ImagePart:
    """A 32x32 red PNG, made now."""
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), (220, 20, 20)).save(buffer, format="PNG")
    return ImagePart(mime_type="image/png", width=32, height=32, data=buffer.getvalue(), name="check.png")


async def check_model(row: ModelRow, registry: ProviderRegistry, *, seconds_allowed: float) -> CheckResult:
    """Send the tiny request to one model and report how it went."""
    try:
        provider = registry.get(row.provider)
    except NoSuchProvider as exc:
        return CheckResult(ref=row.ref, ok=False, code="provider_unavailable", hint=str(exc))
    if variable := missing_key(row, provider, registry):
        return CheckResult(ref=row.ref, ok=False, code="provider_key_missing", hint=f"set {variable}")
    spec = model_spec(row)
    caps = effective_capabilities(row, provider)
    parts: tuple[TextPart | ImagePart, ...] = (TextPart(text=PROMPT),)
    if caps.vision:
        parts = (TextPart(text=IMAGE_PROMPT), probe_image())
    messages = [Message(role="user", parts=parts)]
    started = time.perf_counter()
    first: int | None = None
    try:
        async with asyncio.timeout(seconds_allowed):
            async for event in provider.stream(
                messages, spec, RequestOptions(max_output_tokens=MAX_OUTPUT_TOKENS)
            ):
                if first is None and isinstance(event, TextDelta | ToolCallStart):
                    first = round((time.perf_counter() - started) * 1000)
    except ProviderError as exc:
        hint = key_hint(provider, spec) if exc.kind == "auth" else _HINTS.get(exc.kind, _HINTS["other"])
        return CheckResult(
            ref=row.ref, ok=False, code=f"provider_{exc.kind}", hint=f"{hint} ({exc.message[:120]})"
        )
    except UnsupportedPartError as exc:
        return CheckResult(ref=row.ref, ok=False, code="unsupported_part", hint=str(exc))
    except TimeoutError:
        return CheckResult(
            ref=row.ref, ok=False, code="timeout", hint=f"no complete answer within {seconds_allowed:g} s"
        )
    return CheckResult(ref=row.ref, ok=True, first_token_ms=first)


async def check_models(
    alchemy: SQLAlchemyAsyncConfig,
    registry: ProviderRegistry,
    refs: Sequence[str],
    *,
    progress: Callable[[str], None],
    seconds_allowed: float = 60.0,
) -> list[CheckResult]:
    """Check the named models (``provider/modelId`` or id), or every enabled one; one progress line each."""
    await registry.ready()
    async with session_scope(alchemy) as session:
        repo = ModelRepository(session=session)
        rows: list[ModelRow | str] = []
        if refs:
            for ref in refs:
                rows.append(await repo.get_by_ref(ref) or ref)
        else:
            rows.extend(await repo.list_catalogue(include_disabled=False))
    results: list[CheckResult] = []
    for index, row in enumerate(rows, 1):
        if isinstance(row, str):
            result = CheckResult(
                ref=row, ok=False, code="model_not_found", hint="no such model in the catalogue"
            )
        else:
            progress(f"[{index}/{len(rows)}] {row.ref} …")
            result = await check_model(row, registry, seconds_allowed=seconds_allowed)
        progress(
            f"[{index}/{len(rows)}] {result.ref}: {'ok' if result.ok else 'FAILED ' + (result.code or '')}"
        )
        results.append(result)
    return results


def table(results: Sequence[CheckResult]) -> str:
    """The results as a plain-text table: model, ok/failed, first-token ms, error code and hint."""
    header = ("model", "result", "first token", "error")
    rows = [
        (
            r.ref,
            "ok" if r.ok else "failed",
            f"{r.first_token_ms} ms" if r.first_token_ms is not None else "-",
            f"{r.code}: {r.hint}" if r.code else "",
        )
        for r in results
    ]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(3)]
    lines = [
        "  ".join(
            [*(cell.ljust(width) for cell, width in zip(line[:3], widths, strict=True)), line[3]]
        ).rstrip()
        for line in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in [*widths, len(header[3])]))
    return "\n".join(lines)
