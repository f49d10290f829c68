"""The packages keep their promises about what they import.

The graph: ``core`` at the bottom imports nothing of ours; ``serving`` and ``platform_api``
stand on it and never import each other; ``switchyard`` at the top wires both. ``intent`` (the
model runner and its input format) imports nothing of ours; ``serving`` and ``training`` both
run the model through it and never import each other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OURS = {"core", "intent", "serving", "platform_api", "switchyard", "training"}
# What each package may import of ours (itself included).
ALLOWED = {
    "core": {"core"},
    "intent": {"intent"},
    "serving": {"serving", "core", "intent"},
    "platform_api": {"platform_api", "core"},
    "training": {"training", "intent"},
    "switchyard": OURS - {"training"},
}


def _static_imports(package: str) -> dict[str, set[str]]:
    """Top-level packages of ours each module of ``package`` names in an import statement."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(REPO))] = names & OURS
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_it_stands_on(package: str) -> None:
    crossings = {
        module: sorted(names - ALLOWED[package])
        for module, names in _static_imports(package).items()
        if names - ALLOWED[package]
    }
    assert crossings == {}


def _imported_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    return {name.split(".")[0] for name in result.stdout.split()}


def test_core_imports_nothing_of_ours() -> None:
    modules = _imported_after(
        "import core.settings, core.settings_doc, core.errors, core.request_context, "
        "core.log_config, core.gc_tuning"
    )
    assert modules & OURS == {"core"}


@pytest.mark.parametrize(
    "statement",
    [
        "import serving.http, serving.client, serving.deployment, serving.serve_app",
        "import serving.rollout, serving.cli, serving.schemas, serving.rate_limit",
    ],
)
def test_serving_never_imports_the_database_or_the_platform(statement: str) -> None:
    modules = _imported_after(statement)
    assert modules.isdisjoint({"sqlmodel", "sqlalchemy", "alembic", "platform_api", "switchyard"})


@pytest.mark.parametrize(
    "statement",
    [
        "import platform_api.api.routes, platform_api.services.unified, platform_api.cli.db",
        "import platform_api.jobs.webhooks, platform_api.sandbox.app, platform_api.db",
    ],
)
def test_platform_api_never_imports_the_model_stack_or_serving(statement: str) -> None:
    modules = _imported_after(statement)
    assert modules.isdisjoint({"torch", "onnxruntime", "intent", "serving", "switchyard", "ray"})


def test_the_front_never_imports_torch_or_onnxruntime(settings: object) -> None:
    # `settings` points the subprocess at the test session's database and Redis.
    modules = _imported_after(
        "from switchyard.app import from_environment as make; make()\n"
        "import switchyard.cli, switchyard.supervisor"
    )
    assert modules.isdisjoint({"torch", "onnxruntime"})


def test_training_never_imports_the_web_layer() -> None:
    modules = _imported_after("import training.train, training.evaluate, intent.text_format")
    assert modules.isdisjoint({"fastapi", "starlette", "platform_api", "serving", "ray"})
