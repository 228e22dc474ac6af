"""What the OpenAPI document needs beyond what Litestar infers from handler signatures.

A typed client is generated from ``/schema/openapi.json`` (README), so nothing we document may be
untyped:

- **Events.** Every SSE endpoint answers ``text/event-stream``; each event (``AgUiServerSentEvent``,
  OpenAPI 3.1's ``schema`` of a stream being one event) has a ``data:`` line that is JSON of ``AgUiEvent``, a
  ``oneOf`` of the event structs in :mod:`iris.app.agui.events` and the ``MESSAGES_SNAPSHOT`` a re-attach
  sends when asked, discriminated by ``type``; the ``iris/…``
  metadata objects are typed from :mod:`iris.app.runs.content.outputs`.
- **Bodies parsed by hand.** Run input messages and chat parts are read leniently by hand
  (:mod:`iris.app.agui.input`, :mod:`iris.app.runs.intake.chat_input`), so the request structs type them as
  dicts.
  :data:`~iris.app.api.openapi.schemas.SHARPER` gives just those fields the shapes the parsers accept;
  every other field comes from the request struct itself.
- **Errors.** Each operation lists the problem+json statuses and ``code`` values it can answer
  (:func:`documented`, used on every route); the ones every route shares are added from what the
  operation is (authenticated, has a JSON body or query parameters).
- **Any.** A Python ``Any`` is any JSON value: ``JsonValue``, never an empty schema.

The machinery: :mod:`~iris.app.api.openapi.document` (the component schemas and
:class:`IrisOpenAPIConfig`, which merges them in) and :mod:`~iris.app.api.openapi.operations`
(:func:`documented`). The declarations: :mod:`~iris.app.api.openapi.schemas` (the shapes) and
:mod:`~iris.app.api.openapi.codes` (the problem codes). Routes and ``asgi`` import from this package.
"""

from iris.app.api.openapi.codes import AGUI_INPUT_CODES, INLINE_MEDIA_CHECKS, RUN_CHECKS, STATELESS_CHECKS
from iris.app.api.openapi.document import IrisOpenAPIConfig
from iris.app.api.openapi.operations import documented

__all__ = [
    "AGUI_INPUT_CODES",
    "INLINE_MEDIA_CHECKS",
    "RUN_CHECKS",
    "STATELESS_CHECKS",
    "IrisOpenAPIConfig",
    "documented",
]
