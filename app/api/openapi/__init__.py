"""The OpenAPI document (moved into a package; split next)."""

from app.api.openapi.schemas import (
    AGUI_INPUT_CODES,
    RUN_CHECKS,
    STATELESS_CHECKS,
    IrisOpenAPIConfig,
    documented,
)

__all__ = ["AGUI_INPUT_CODES", "RUN_CHECKS", "STATELESS_CHECKS", "IrisOpenAPIConfig", "documented"]
