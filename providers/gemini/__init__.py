"""Google's Gemini API: ``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse``.

Images go as ``inlineData`` (base64) or ``fileData`` (a URL Google fetches, on models that take
external URLs), tools as ``functionDeclarations``, calls and results as ``functionCall`` /
``functionResponse`` parts. The key travels in the ``x-goog-api-key`` header, never in the URL, so it
cannot leak through logged URLs. The SSE stream has no end sentinel: a chunk with ``finishReason``
ends it. Gemini has no call ids, so the stream makes deterministic ones and results go back by name.

Thinking: asked to reason, ``generationConfig.thinkingConfig`` asks for ``includeThoughts`` with a
``thinkingBudget`` (2.5) or a ``thinkingLevel`` (3.x); ``thought: true`` parts stream as reasoning.
A ``thoughtSignature`` on a ``functionCall`` part is kept for that call and sent back on it, byte for
byte, in every later request (Gemini 3 refuses a replayed call without it).

The body is built in :mod:`iris.providers.gemini.request`, the chunks translated in
:mod:`iris.providers.gemini.stream`; :mod:`iris.providers.gemini.provider` holds the provider joining them,
and
:mod:`iris.providers.gemini.names` reads what a model name says (its version, whether it fetches URLs).
"""

from iris.providers.gemini.names import takes_external_urls
from iris.providers.gemini.provider import (
    BASE_URL_ENV,
    DEFAULT_BASE_URL,
    IMAGE_MIME_TYPES,
    KEY_ENV,
    MAX_IMAGES,
    MAX_INLINE_BYTES,
    MAX_REQUEST_BYTES,
    MODEL_OPTIONS,
    GeminiProvider,
    create,
)
from iris.providers.gemini.request import EXTRA_GENERATION_CONFIG, EXTRA_TOP_LEVEL, SKIP_SIGNATURE
from iris.providers.gemini.stream import could_not_fetch

__all__ = [
    "BASE_URL_ENV",
    "DEFAULT_BASE_URL",
    "EXTRA_GENERATION_CONFIG",
    "EXTRA_TOP_LEVEL",
    "IMAGE_MIME_TYPES",
    "KEY_ENV",
    "MAX_IMAGES",
    "MAX_INLINE_BYTES",
    "MAX_REQUEST_BYTES",
    "MODEL_OPTIONS",
    "SKIP_SIGNATURE",
    "GeminiProvider",
    "could_not_fetch",
    "create",
    "takes_external_urls",
]
