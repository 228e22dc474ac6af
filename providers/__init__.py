"""Provider SPI and built-in vendors. Imports nothing from ``app``.

Third parties implement :class:`Provider` and expose a factory through the ``iris.providers``
entry-point group; everything they need is re-exported here.
"""

from providers.errors import NoSuchProvider, ProviderError, UnsupportedPartError
from providers.events import (
    Finish,
    ProviderEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningOpaque,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    Warning,
)
from providers.messages import (
    ImagePart,
    Message,
    Part,
    ReasoningEffort,
    ReasoningPart,
    ReasoningRequest,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from providers.options import OptionSpec, declared_options, required_key_env
from providers.spec import (
    SPEC_VERSION,
    Capabilities,
    ModelSpec,
    Provider,
    ProviderContext,
    ProviderFactory,
    ReasoningSupport,
)

__all__ = [
    "SPEC_VERSION",
    "Capabilities",
    "Finish",
    "ImagePart",
    "Message",
    "ModelSpec",
    "NoSuchProvider",
    "OptionSpec",
    "Part",
    "Provider",
    "ProviderContext",
    "ProviderError",
    "ProviderEvent",
    "ProviderFactory",
    "ReasoningDelta",
    "ReasoningEffort",
    "ReasoningEnd",
    "ReasoningOpaque",
    "ReasoningPart",
    "ReasoningRequest",
    "ReasoningStart",
    "ReasoningSupport",
    "RequestOptions",
    "TextDelta",
    "TextEnd",
    "TextPart",
    "TextStart",
    "ToolCallArgs",
    "ToolCallEnd",
    "ToolCallPart",
    "ToolCallStart",
    "ToolResultPart",
    "ToolSpec",
    "UnsupportedPartError",
    "Usage",
    "Warning",
    "declared_options",
    "required_key_env",
]
