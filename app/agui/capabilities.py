"""AG-UI ``AgentCapabilities`` (``GET /agent/capabilities``): only what this server honours.

Omitted groups mean "undeclared". Transport resumption stays undeclared: Iris's re-attach endpoint
is an extension, not the protocol's ``resumable`` mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from iris.app.agui.ui_stream import HEADERS as UI_STREAM_HEADERS
from iris.providers import ReasoningSupport, ToolSpec
from iris.providers.wire import WireStruct


class _Group(WireStruct, omit_defaults=True, kw_only=True):
    pass


class IdentityCapabilities(_Group, kw_only=True):
    name: str
    type: str
    description: str
    version: str


class TransportCapabilities(_Group, kw_only=True):
    streaming: bool


class ToolOut(_Group, kw_only=True):
    name: str
    description: str
    parameters: dict[str, Any]


class ToolsCapabilities(_Group, kw_only=True):
    supported: bool
    items: list[ToolOut]
    client_provided: bool


class MultimodalInput(_Group, kw_only=True):
    image: bool
    audio: bool
    video: bool
    pdf: bool
    file: bool


class MultimodalCapabilities(_Group, kw_only=True):
    input: MultimodalInput


class ExecutionCapabilities(_Group, kw_only=True):
    max_iterations: int


class HumanInTheLoopCapabilities(_Group, kw_only=True):
    supported: bool
    approvals: bool
    interrupts: bool


class ReasoningCapabilities(_Group, kw_only=True):
    supported: bool
    streaming: bool
    encrypted: bool


class UploadLimits(WireStruct, kw_only=True):
    """``custom["iris/uploadLimits"]``: what ``POST /api/files`` and a message take, so a client (the
    page) shows the server's limits instead of constants of its own."""

    accepted_types: list[str]
    max_image_bytes: int
    max_images_per_message: int
    max_documents_per_message: int
    max_audio_per_message: int
    max_document_bytes: int
    max_document_pages: int
    max_audio_bytes: int
    max_audio_seconds: float


class StreamEvents(WireStruct, kw_only=True):
    """``custom["iris/events"]``: the AG-UI events beyond the core ones that Iris sends, and how to get
    them. ``activityTypes``: the ``activityType`` of its ``ACTIVITY_SNAPSHOT``/``ACTIVITY_DELTA`` events
    (``iris/toolProgress``: a running tool's progress and log lines, sent unasked). ``messagesSnapshot``:
    the requests that answer with a ``MESSAGES_SNAPSHOT`` (only when asked: ``?snapshot=messages``)."""

    activity_types: list[str]
    messages_snapshot: list[str]


STREAM_EVENTS = StreamEvents(
    activity_types=["iris/toolProgress"],
    messages_snapshot=[
        "GET /agent/runs/{runId}/events?snapshot=messages",
        "GET /agent/threads/{threadId}/messages?snapshot=messages",
    ],
)


class UiChatSurface(WireStruct, kw_only=True):
    """``custom["iris/uiChat"]``: the AI SDK's ``useChat`` surface (its UI message stream, whose version
    is the ``x-vercel-ai-ui-message-stream`` header), so a client finds it without a constant of its own.
    Paths take the agent's slug and the chat id."""

    protocol: str
    version: str
    path: str
    resume_path: str
    messages_path: str


UI_CHAT = UiChatSurface(
    protocol="ai-sdk-ui-message-stream",
    version=UI_STREAM_HEADERS["x-vercel-ai-ui-message-stream"],
    path="/api/agents/{slug}/ui-chat",
    resume_path="/api/agents/{slug}/ui-chat/{id}/stream",
    messages_path="/api/agents/{slug}/ui-chat/{id}/messages",
)


class AgentCapabilities(_Group, kw_only=True):
    identity: IdentityCapabilities
    transport: TransportCapabilities
    tools: ToolsCapabilities
    multimodal: MultimodalCapabilities
    execution: ExecutionCapabilities
    human_in_the_loop: HumanInTheLoopCapabilities
    reasoning: ReasoningCapabilities
    custom: dict[str, Any] | None = None


def agent_capabilities(
    *,
    version: str,
    server_tools: Sequence[ToolSpec],
    max_iterations: int,
    reasoning: Mapping[str, ReasoningSupport],
    upload_limits: UploadLimits,
    pdf: bool = False,
    audio: bool = False,
) -> AgentCapabilities:
    """What ``POST /agent/runs`` does: streams over SSE, takes images, and PDFs and audio where an
    enabled model reads them natively (``pdf``, ``audio``; no video),
    executes the listed server tools up to ``max_iterations`` model turns, leaves the client's own
    tools to the client, and asks for approval (an interrupt) before tools with side effects.

    Reasoning depends on the model a run uses: ``reasoning`` says what at least one enabled model does
    (``forwardedProps.enableThinking`` asks for it), and ``custom["iris/reasoningByModel"]`` says it
    per model ref, as ``GET /api/models`` does. ``custom["iris/uploadLimits"]`` carries the upload
    limits (:class:`UploadLimits`), ``custom["iris/events"]`` the newer events it sends
    (:class:`StreamEvents`), ``custom["iris/uiChat"]`` the ``useChat`` surface (:class:`UiChatSurface`)."""
    return AgentCapabilities(
        identity=IdentityCapabilities(
            name="Iris",
            type="iris",
            description="Multimodal agent chat: text and images in, AG-UI 1.0 events out.",
            version=version,
        ),
        transport=TransportCapabilities(streaming=True),
        tools=ToolsCapabilities(
            supported=bool(server_tools),
            items=[
                ToolOut(name=t.name, description=t.description, parameters=t.parameters) for t in server_tools
            ],
            client_provided=True,
        ),
        multimodal=MultimodalCapabilities(
            input=MultimodalInput(image=True, audio=audio, video=False, pdf=pdf, file=False)
        ),
        execution=ExecutionCapabilities(max_iterations=max_iterations),
        human_in_the_loop=HumanInTheLoopCapabilities(supported=True, approvals=True, interrupts=True),
        reasoning=ReasoningCapabilities(
            supported=any(r.supported for r in reasoning.values()),
            streaming=any(r.supported and r.streamed for r in reasoning.values()),
            encrypted=any(r.supported and r.encrypted for r in reasoning.values()),
        ),
        custom={
            "iris/reasoningByModel": dict(sorted(reasoning.items())),
            "iris/uploadLimits": upload_limits,
            "iris/events": STREAM_EVENTS,
            "iris/uiChat": UI_CHAT,
        },
    )
