"""HTTP controllers. They hold no SQL and no vendor code: repositories and services do the work."""

from __future__ import annotations

from litestar import Router
from litestar.types import ControllerRouterHandler

from iris.app.api.anthropic.routes import MessagesController
from iris.app.api.openai.responses_routes import ResponsesController
from iris.app.api.openai.routes import OpenAIController
from iris.app.api.routes.agents import AgentController, AgentPickerController, AgentPromptController
from iris.app.api.routes.api_keys import ApiKeyController
from iris.app.api.routes.audit import AuditController
from iris.app.api.routes.auth import AuthController
from iris.app.api.routes.chat import ChatController
from iris.app.api.routes.files import FileController
from iris.app.api.routes.health import HealthController
from iris.app.api.routes.llm import LlmController
from iris.app.api.routes.mcp_oauth import McpOAuthController
from iris.app.api.routes.mcp_servers import McpServerController, ToolController
from iris.app.api.routes.models import ModelController
from iris.app.api.routes.providers import ProviderController
from iris.app.api.routes.resource_links import ResourceLinkController
from iris.app.api.routes.runs import RunController
from iris.app.api.routes.sessions import SearchController, SessionController
from iris.app.api.routes.spend import MySpendController
from iris.app.api.routes.storage import StorageController
from iris.app.api.routes.ui_chat import UiChatController
from iris.app.api.routes.usage import UsageController
from iris.app.api.routes.web import ChatPageController
from iris.app.settings import Settings

ROUTE_HANDLERS = [
    HealthController,
    AuthController,
    ApiKeyController,
    UsageController,
    MySpendController,
    AuditController,
    ModelController,
    ProviderController,
    McpServerController,
    ToolController,
    McpOAuthController,
    AgentController,
    AgentPickerController,
    AgentPromptController,
    FileController,
    StorageController,
    ChatController,
    SessionController,
    ResourceLinkController,
    SearchController,
    LlmController,
    OpenAIController,
    ResponsesController,
    MessagesController,
    ChatPageController,
]


def route_handlers(settings: Settings) -> list[ControllerRouterHandler]:
    """Every controller. ``/agent/runs`` takes larger bodies than the rest (``IRIS_MAX_RUN_REQUEST_BYTES``):
    AG-UI clients send documents and audio inline, as base64, and resend the conversation each turn; the
    AI SDK's ``useChat`` sends its files as ``data:`` URLs."""
    runs = Router(
        path="/",
        route_handlers=[RunController, UiChatController],
        request_max_body_size=max(settings.max_request_bytes, settings.max_run_request_bytes),
    )
    return [*ROUTE_HANDLERS, runs]
