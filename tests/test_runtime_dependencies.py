"""A runtime-only install (`pip install -e .`, what `make run` does) can import the service.

Every third-party import of the service's packages, at module level or inside a function,
must come from a distribution `[project.dependencies]` names: a package only an extra installs
makes the Serve application fail to build on a user's machine, while CI, which installs the
extras, would never see it.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_PACKAGES = ("core", "intent", "serving", "platform_api", "switchyard", "sandbox")
# `training` ships in the same distribution but runs only with the `train` extra.
OWN_PACKAGES = {*RUNTIME_PACKAGES, "training"}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _runtime_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        _normalized(re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0]) for dep in project["dependencies"]
    }


def _imports(path: Path) -> set[str]:
    """Top-level names of the absolute imports anywhere in the module."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def _third_party_imports() -> dict[str, set[str]]:
    """Each third-party top-level import name, with the modules that import it."""
    found: dict[str, set[str]] = {}
    for package in RUNTIME_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in _imports(path) - OWN_PACKAGES - set(sys.stdlib_module_names):
                found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_runtime_import_comes_from_a_declared_dependency() -> None:
    declared = _runtime_distributions()
    providers = metadata.packages_distributions()
    undeclared = {
        name: sorted(modules)
        for name, modules in _third_party_imports().items()
        if not {_normalized(d) for d in providers.get(name, [])} & declared
    }
    assert undeclared == {}, (
        "imported by the service but not in [project.dependencies] "
        "(a runtime-only install cannot import them)"
    )


def test_the_service_packages_never_import_training() -> None:
    importers = {
        str(path.relative_to(ROOT))
        for package in RUNTIME_PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "training" in _imports(path)
    }
    assert importers == set()


def test_the_import_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "lazy.py"
    module.write_text("def load():\n    import onnx.helper\n    from torch import nn\n")
    assert _imports(module) == {"onnx", "torch"}
