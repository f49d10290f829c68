"""The Serve application: `serve build serving.serve_app:app` and `serve run` start here."""

from __future__ import annotations

from pydantic import BaseModel, Field
from ray.serve import Application

from serving.deployment import IntentClassifier
from serving.protocol import APP_NAME, DEPLOYMENT_NAME

__all__ = ["APP_NAME", "DEPLOYMENT_NAME", "AppArgs", "app", "build_app"]


class AppArgs(BaseModel):
    """Arguments of the application (the ``args`` block of the Serve config)."""

    models_root: str | None = Field(
        default=None,
        description="Directory holding model versions and LATEST; unset: the repository's models/.",
    )


def build_app(args: dict[str, str]) -> Application:
    """The intent classifier application; it has no HTTP route (the FastAPI front calls it)."""
    models_root = AppArgs.model_validate(args or {}).models_root
    # @serve.deployment turns the class into a Deployment; mypy does not apply class decorators.
    return IntentClassifier.bind(models_root)  # type: ignore[attr-defined]


# The argument-free application, for `serve build serving.serve_app:app` (it wants an Application).
app: Application = build_app({})
