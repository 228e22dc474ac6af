"""Provider SPI and built-in vendors. Imports nothing from ``app``.

Third parties implement :class:`Provider` and expose a factory through the ``iris.providers``
entry-point group; everything they need is re-exported here.
"""

if __name__ != "iris.providers":  # the folder on sys.path: a second copy of every module (ADR 0072)
    raise ImportError("import Iris as iris.providers, not as providers")


from iris.providers.errors import NoSuchProvider, ProviderError, UnsupportedPartError
from iris.providers.events import (
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
from iris.providers.image_formulas import ImageFormula
from iris.providers.messages import (
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    Part,
    ReasoningEffort,
    ReasoningPart,
    ReasoningRequest,
    RequestOptions,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
)
from iris.providers.options import OptionSpec, declared_options, required_key_env
from iris.providers.spec import (
    ALL_PARAMETERS,
    SPEC_VERSION,
    AudioSupport,
    Capabilities,
    DocumentSupport,
    ModelSpec,
    ParameterSupport,
    Provider,
    ProviderContext,
    ProviderFactory,
    ReasoningSupport,
)
from iris.providers.vendor_facts import VendorFacts

__all__ = [
    "ALL_PARAMETERS",
    "SPEC_VERSION",
    "AudioPart",
    "AudioSupport",
    "Capabilities",
    "DocumentPart",
    "DocumentSupport",
    "Finish",
    "ImageFormula",
    "ImagePart",
    "Message",
    "ModelSpec",
    "NoSuchProvider",
    "OptionSpec",
    "ParameterSupport",
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
    "ResponseFormat",
    "TextDelta",
    "TextEnd",
    "TextPart",
    "TextStart",
    "ToolCallArgs",
    "ToolCallEnd",
    "ToolCallPart",
    "ToolCallStart",
    "ToolChoice",
    "ToolResultPart",
    "ToolSpec",
    "UnsupportedPartError",
    "Usage",
    "VendorFacts",
    "Warning",
    "declared_options",
    "required_key_env",
]
