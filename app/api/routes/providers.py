"""Installed provider plugins."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency

from iris.app.api.openapi import documented
from iris.app.catalogue.options import accepted_options
from iris.app.catalogue.views import effective_capabilities
from iris.app.persistence.repositories import ModelRepository
from iris.app.schemas.providers import ModelCapabilitiesOut, ProviderFailureOut, ProviderList, ProviderOut
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.providers import ModelSpec
from iris.providers.registry import ProviderRegistry


class ProviderController(Controller):
    """``GET /api/providers``."""

    path = "/api/providers"
    tags = ["Providers"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, ModelRepository, ProviderRegistry]

    @get("/", operation_id="ListProviders", operation_class=documented())
    async def list_providers(
        self,
        principal: NamedDependency[Principal],
        registry: NamedDependency[ProviderRegistry],
        model_repo: NamedDependency[ModelRepository],
        settings: NamedDependency[Settings],
    ) -> ProviderList:
        """Loaded providers with their declared capabilities (and per catalogue model) and the model
        options they accept, and failed plugins."""
        await registry.ready()  # the first listing loads what start-up did not (off the loop)
        loaded, failures = registry.load_all()
        rows = await model_repo.list_catalogue(include_disabled=principal.is_admin)
        return ProviderList(
            providers=[
                ProviderOut(
                    id=provider_id,
                    spec_version=provider.spec_version,
                    declared=provider.capabilities(
                        ModelSpec(provider=provider_id, model_id="*", type="multimodal", supports_tools=True)
                    ),
                    options=accepted_options(provider_id, registry),
                    models=[
                        ModelCapabilitiesOut(
                            ref=row.ref,
                            capabilities=effective_capabilities(
                                row, provider, max_images_per_message=settings.max_images_per_message
                            ),
                        )
                        for row in rows
                        if row.provider == provider_id
                    ],
                )
                for provider_id, provider in loaded.items()
            ],
            failed=[ProviderFailureOut(id=f.id, source=f.source, error=f.error) for f in failures],
        )
