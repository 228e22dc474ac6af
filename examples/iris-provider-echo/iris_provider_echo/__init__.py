"""Echo: answers with what it was sent (text, and the size of each image). A template for real plugins.

It declares no reasoning (``Capabilities.reasoning`` keeps its default), so it never gets
``RequestOptions.reasoning``; reasoning parts another model left in the history are skipped, since
they are only ever valid for the vendor that made them.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from iris.providers import (
    SPEC_VERSION,
    Capabilities,
    Finish,
    ImagePart,
    Message,
    ModelSpec,
    ProviderContext,
    ProviderEvent,
    ReasoningPart,
    RequestOptions,
    TextDelta,
    TextEnd,
    TextPart,
    TextStart,
    UnsupportedPartError,
    Usage,
)


class EchoProvider:
    id = "echo"
    spec_version = SPEC_VERSION

    def capabilities(self, model: ModelSpec) -> Capabilities:
        vision = model.type != "text"
        return Capabilities(
            vision=vision,
            image_mime_types=("image/png", "image/jpeg") if vision else (),
            max_images=8 if vision else 0,
            max_image_bytes=5 * 1024 * 1024 if vision else 0,
            recommended_long_edge_px=1024,
        )

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        caps = self.capabilities(model)
        turns: list[dict[str, Any]] = []
        for message in messages:
            parts: list[dict[str, Any]] = []
            for part in message.parts:
                if isinstance(part, ReasoningPart):
                    continue  # another vendor's thinking: never sent anywhere else
                if isinstance(part, TextPart):
                    parts.append({"text": part.text})
                elif isinstance(part, ImagePart):
                    if part.mime_type not in caps.image_mime_types or part.data is None:
                        raise UnsupportedPartError(self.id, "image", part.mime_type)
                    digest = hashlib.sha256(part.data).hexdigest()  # names the exact bytes it was given
                    image = {"mime": part.mime_type, "size": [part.width, part.height], "sha256": digest}
                    parts.append({"image": image})
                else:
                    raise UnsupportedPartError(self.id, type(part).__name__)
            turns.append({"role": message.role, "parts": parts})
        return {"model": model.model_id, "turns": turns}

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        request = self.build_request(messages, model, options)
        last = request["turns"][-1]["parts"] if request["turns"] else []
        words = [p["text"] if "text" in p else "[image {}x{}]".format(*p["image"]["size"]) for p in last]
        yield TextStart(id="echo")
        yield TextDelta(id="echo", delta="echo: " + " ".join(words))
        yield TextEnd(id="echo")
        yield Usage(input_tokens=len(words), output_tokens=len(words) + 1)
        yield Finish(reason="stop")


def create(context: ProviderContext) -> EchoProvider:
    return EchoProvider()
