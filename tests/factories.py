"""Row builders for repository tests (polyfactory fills what a test does not care about)."""

from __future__ import annotations

from polyfactory.factories.sqlalchemy_factory import SQLAlchemyFactory

from iris.app.persistence.models import Agent, ModelRow


class ModelRowFactory(SQLAlchemyFactory[ModelRow]):
    __check_model__ = False
    __set_relationships__ = False
    __set_foreign_keys__ = False

    provider = "local"
    type = "vision"
    options: dict[str, object] = {}
    max_images = None
    max_image_bytes = None


class AgentFactory(SQLAlchemyFactory[Agent]):
    __check_model__ = False
    __set_relationships__ = False
    __set_foreign_keys__ = False

    default_model_id = None
    model_ids: list[str] = []
    tools: list[str] = []
    reasoning: dict[str, object] = {}
    max_tool_iterations = None
    enabled = True
    from_file = False
