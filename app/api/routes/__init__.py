"""HTTP controllers. They hold no SQL and no vendor code: repositories and services do the work."""

from __future__ import annotations

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
    RunController,
    ChatController,
    SessionController,
    SearchController,
    LlmController,
    OpenAIController,
    ChatPageController,
]
