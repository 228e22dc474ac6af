"""HTTP controllers. They hold no SQL and no vendor code: repositories and services do the work."""

from __future__ import annotations

from app.routes.agents import AgentController
from app.routes.auth import AuthController
from app.routes.chat import ChatController
from app.routes.files import FileController
from app.routes.health import HealthController
from app.routes.llm import LlmController
from app.routes.models import ModelController
from app.routes.providers import ProviderController
from app.routes.runs import RunController
from app.routes.storage import StorageController
from app.routes.web import ChatPageController

ROUTE_HANDLERS = [
    HealthController,
    AuthController,
    ModelController,
    ProviderController,
    AgentController,
    FileController,
    StorageController,
    RunController,
    ChatController,
    LlmController,
    ChatPageController,
]
