"""HTTP controllers. They hold no SQL and no vendor code: repositories and services do the work."""

from __future__ import annotations

from litestar import Router
from litestar.types import ControllerRouterHandler

from app.api.openai.routes import OpenAIController
from app.api.routes.agents import AgentController, AgentPickerController
from app.api.routes.auth import AuthController
from app.api.routes.chat import ChatController
from app.api.routes.files import FileController
from app.api.routes.health import HealthController
from app.api.routes.llm import LlmController
from app.api.routes.mcp_servers import McpServerController, ToolController
from app.api.routes.models import ModelController
from app.api.routes.providers import ProviderController
from app.api.routes.runs import RunController
from app.api.routes.sessions import SearchController, SessionController
from app.api.routes.storage import StorageController
from app.api.routes.web import ChatPageController
from app.settings import Settings

ROUTE_HANDLERS = [
    HealthController,
    AuthController,
    ModelController,
    ProviderController,
    McpServerController,
    ToolController,
    AgentController,
    AgentPickerController,
    FileController,
    StorageController,
    ChatController,
    SessionController,
    SearchController,
    LlmController,
    OpenAIController,
    ChatPageController,
]


def route_handlers(settings: Settings) -> list[ControllerRouterHandler]:
    """Every controller. ``/agent/runs`` takes larger bodies than the rest (``IRIS_MAX_RUN_REQUEST_BYTES``):
    AG-UI clients send documents and audio inline, as base64, and resend the conversation each turn."""
    runs = Router(
        path="/",
        route_handlers=[RunController],
        request_max_body_size=max(settings.max_request_bytes, settings.max_run_request_bytes),
    )
    return [*ROUTE_HANDLERS, runs]
