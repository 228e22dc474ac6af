"""The ``openai`` SDK's own types as a strict oracle for ``/v1`` answers.

The SDK parses leniently (``construct``: a missing required field becomes ``None``, as a tool call's
``type`` did), and its pydantic types default to ``None`` the fields OpenAI's API reference requires but
allows to be ``null``. :func:`conforming` validates an answer's raw JSON with the SDK's type, then walks
the result and fails on any required key the JSON lacks, at every depth, counting those nullable ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from openai.types.chat import ChatCompletionMessage
from openai.types.chat import chat_completion as completion
from openai.types.chat import chat_completion_chunk as chunk
from openai.types.shared import ErrorObject
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

NULLABLE_REQUIRED: dict[type[BaseModel], frozenset[str]] = {
    completion.Choice: frozenset({"logprobs"}),
    ChatCompletionMessage: frozenset({"content", "refusal"}),
    chunk.Choice: frozenset({"finish_reason"}),
    ErrorObject: frozenset({"param", "code"}),
}
"""Keys OpenAI's API reference requires (``null`` allowed) that the SDK's types default to ``None``."""


class ErrorAnswer(BaseModel):
    """The envelope of every OpenAI error (the SDKs read ``body["error"]``; the SDK has no type for it)."""

    error: ErrorObject


def required_keys(model: type[BaseModel]) -> set[str]:
    """What an answer of ``model`` must carry: the SDK's required fields and the nullable required ones."""
    required = {info.alias or name for name, info in model.model_fields.items() if info.is_required()}
    return required | NULLABLE_REQUIRED.get(model, frozenset())


def conforming(model: type[M], data: Any) -> M:
    """``data`` validated as ``model``; fails naming every required key missing at any depth."""
    parsed = model.model_validate(data)
    missing = list(_missing(parsed, data, model.__name__))
    assert not missing, f"missing required keys: {missing} in {data}"
    return parsed


def _missing(value: Any, raw: Any, path: str) -> Iterator[str]:
    if isinstance(value, BaseModel) and isinstance(raw, dict):
        for key in sorted(required_keys(type(value)) - set(raw)):
            yield f"{path}.{key}"
        for name, info in type(value).model_fields.items():
            key = info.alias or name
            if key in raw:
                yield from _missing(getattr(value, name), raw[key], f"{path}.{key}")
    elif isinstance(value, list) and isinstance(raw, list):
        for index, (item, raw_item) in enumerate(zip(value, raw, strict=False)):
            yield from _missing(item, raw_item, f"{path}[{index}]")
