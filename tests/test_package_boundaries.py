"""The packages keep their promises about what they import."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _imported_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return {name.split(".")[0] for name in result.stdout.split()}


@pytest.mark.parametrize(
    "statement",
    [
        "import serving.http, serving.client, serving.deployment, serving.app, serving.launch",
        "import serving.cli, serving.schemas, serving.rate_limit",
    ],
)
def test_serving_never_imports_the_database(statement: str) -> None:
    assert _imported_after(statement).isdisjoint({"sqlmodel", "sqlalchemy", "alembic"})


@pytest.mark.parametrize(
    "statement",
    [
        "from platform_api.app import create_app; create_app()",
        "import platform_api.cli, platform_api.supervisor, platform_api.jobs.webhooks",
    ],
)
def test_platform_api_never_imports_torch_or_onnxruntime(settings: object, statement: str) -> None:
    # `settings` points the subprocess at the test session's database and Redis.
    assert _imported_after(statement).isdisjoint({"torch", "onnxruntime"})


def test_training_never_imports_the_web_layer() -> None:
    modules = _imported_after("import training.train, training.evaluate, training.text_format")
    assert modules.isdisjoint({"fastapi", "starlette", "platform_api", "serving", "ray"})
