"""The packages keep their promises about what they import.

The graph: ``core`` at the bottom imports nothing of ours; ``serving`` and ``platform_api``
stand on it and never import each other; ``switchyard`` at the top wires both. ``intent`` (the
model runner and its input format) imports nothing of ours; ``serving`` and ``training`` both
run the model through it and never import each other. ``sandbox`` (the fake provider
``switchyard run`` starts) stands on ``core`` alone, and the platform reaches it only over HTTP:
nothing of ours imports it but ``switchyard`` (and the tests and benchmarks, not checked here).

Inside ``platform_api`` each sub-package and top-level module stands in a layer
(``PLATFORM_LAYERS``, bottom first) and imports, at module level or inside a function, only its
own layer and the ones below; neither the sub-packages nor the modules import in a circle. The
queue task paths RQ keeps in Redis resolve, today's and the previous release's.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OURS = {"core", "intent", "serving", "platform_api", "sandbox", "switchyard", "training"}
# What each package may import of ours (itself included).
ALLOWED = {
    "core": {"core"},
    "intent": {"intent"},
    "serving": {"serving", "core", "intent"},
    "platform_api": {"platform_api", "core"},
    "sandbox": {"sandbox", "core"},
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
        "import platform_api.tasks.webhooks, platform_api.tasks.sync, platform_api.db",
    ],
)
def test_platform_api_never_imports_the_model_stack_serving_or_the_sandbox(statement: str) -> None:
    modules = _imported_after(statement)
    assert modules.isdisjoint(
        {"torch", "onnxruntime", "intent", "serving", "switchyard", "ray", "sandbox"}
    )


def test_only_switchyard_may_import_the_sandbox() -> None:
    importers = {
        module
        for package in sorted(ALLOWED.keys() - {"sandbox", "switchyard"})
        for module, names in _static_imports(package).items()
        if "sandbox" in names
    }
    assert importers == set()


def test_the_sandbox_imports_nothing_of_ours_but_core() -> None:
    modules = _imported_after("import sandbox.app, sandbox.data, sandbox.oauth, sandbox.__main__")
    assert modules & OURS == {"sandbox", "core"}


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


# --- platform_api's layers ------------------------------------------------------------------

PLATFORM = REPO / "platform_api"
# Every sub-package and top-level module of platform_api, in layers from the bottom up. A unit
# may import its own layer and the layers below it, never one above.
PLATFORM_LAYERS: list[tuple[str, set[str]]] = [
    # Shared vocabulary and plumbing: import nothing of the platform above them.
    ("foundation", {"ids", "crypto", "db", "egress", "redis_breaker", "pagination",
                    "event_types", "queueing", "connect_page"}),
    ("integration files", {"integrations"}),
    ("tables", {"tables"}),
    ("unified engine", {"unified"}),
    ("webhook delivery", {"webhooks"}),
    ("services", {"services"}),
    ("sync", {"sync"}),
    # ``jobs`` only re-exports ``tasks`` under the paths of the previous release.
    ("queue tasks", {"tasks", "jobs"}),
    ("entry points", {"api", "cli", "migrations", "console"}),
]  # fmt: skip
LAYER_OF = {unit: rank for rank, (_, units) in enumerate(PLATFORM_LAYERS) for unit in units}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _platform_modules() -> dict[str, Path]:
    """Every module of platform_api by dotted name (the package itself included)."""
    return {_module_name(path): path for path in sorted(PLATFORM.rglob("*.py"))}


def _unit(module: str) -> str | None:
    """The sub-package or top-level module a platform_api module belongs to."""
    parts = module.split(".")
    return parts[1] if parts[0] == "platform_api" and len(parts) > 1 else None


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(dotted name, line) of every platform_api module or package ``module`` imports, at any
    depth (inside functions too); ``from a import b`` names ``a.b`` when that is a module."""
    modules = _platform_modules()
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                package = module.split(".")[: None if path.name == "__init__.py" else -1]
                package = package[: len(package) + 1 - node.level]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.append((target if target in modules else base, node.lineno))
    return [(name, line) for name, line in found if name.split(".")[0] == "platform_api"]


def _unit_graph() -> dict[str, dict[str, list[str]]]:
    """unit → unit it imports → the import sites (``module:line``)."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for module, path in _platform_modules().items():
        source = _unit(module)
        for name, line in _imports(module, path):
            target = _unit(name)
            if source is not None and target is not None and target != source:
                graph[source][target].append(f"{module}:{line}")
    return graph


def test_every_platform_api_part_has_a_layer() -> None:
    units = {unit for module in _platform_modules() if (unit := _unit(module)) is not None}
    assert units == set(LAYER_OF), "add the new part to PLATFORM_LAYERS (or drop the gone one)"


def test_the_platform_api_package_itself_imports_nothing_of_its_own() -> None:
    # Importing any part of the platform runs platform_api/__init__.py first.
    assert _imports("platform_api", PLATFORM / "__init__.py") == []


def test_platform_api_parts_import_only_their_layer_and_below() -> None:
    upward = [
        f"{site} imports {target} ({PLATFORM_LAYERS[LAYER_OF[target]][0]}), above "
        f"{source} ({PLATFORM_LAYERS[LAYER_OF[source]][0]})"
        for source, targets in _unit_graph().items()
        for target, sites in targets.items()
        if LAYER_OF.get(target, -1) > LAYER_OF.get(source, len(PLATFORM_LAYERS))
        for site in sites
    ]
    assert upward == []


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        return list(exc.args[1])
    return []


def test_platform_api_sub_packages_import_each_other_in_no_circle() -> None:
    graph = {source: set(targets) for source, targets in _unit_graph().items()}
    assert _cycle(graph) == []


def test_platform_api_modules_import_each_other_in_no_circle() -> None:
    # Imports inside functions count: one there only hides a circle until the function runs.
    graph = {
        module: {name for name, _ in _imports(module, path) if name != module}
        for module, path in _platform_modules().items()
    }
    assert _cycle(graph) == []


def test_queue_task_paths_resolve_today_and_as_the_previous_release_stored_them() -> None:
    # RQ keeps a job's function as a dotted path in Redis (queued jobs, rq-scheduler entries):
    # each path the code enqueues names a function in platform_api.tasks, and each path an
    # earlier release stored still imports the same function (platform_api/jobs/).
    from rq.utils import import_attribute

    from platform_api.queueing.task_paths import ALL_TASK_PATHS, LEGACY_TASK_PATHS

    for path in ALL_TASK_PATHS:
        function = import_attribute(path)
        assert callable(function) and function.__module__.startswith("platform_api.tasks."), path
        assert f"{function.__module__}.{function.__qualname__}" == path
    for old, new in LEGACY_TASK_PATHS.items():
        assert import_attribute(old) is import_attribute(new), old
