"""The configuration table of docs/configuration.md, generated from ``Settings`` so the two agree
(``python -m core.settings_doc`` prints it; ``tests/test_readme.py`` checks the page carries it).

The rows are grouped by area (``core.settings.AREAS``): a bold heading row, then the area's
settings in the order its class declares them."""

from __future__ import annotations

from pydantic.fields import FieldInfo

from core.settings import AREAS, REPO_ROOT, Settings


def env_names(name: str, field: FieldInfo) -> list[str]:
    """The environment variables that set a field (aliases first)."""
    alias = field.validation_alias
    choices = getattr(alias, "choices", None)
    if choices:
        return [str(choice) for choice in choices]
    return [f"SWITCHYARD_{name.upper()}"]


def _default(field: FieldInfo) -> str:
    factory = field.default_factory
    value = factory() if factory is not None else field.default  # type: ignore[call-arg]  # ours take no data
    if value is None:
        return "—"
    text = str(value)
    if str(REPO_ROOT) in text:
        text = text.replace(str(REPO_ROOT), ".")
    return f"`{text}`"


def markdown_table() -> str:
    """One row per setting (variable, default, meaning), under a heading row per area."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for area in AREAS:
        rows.append(f"| **{area.area}** | | |")
        for name in area.model_fields:
            field = Settings.model_fields[name]
            names = " / ".join(f"`{n}`" for n in env_names(name, field)[:1])
            description = (field.description or "").replace("|", "\\|")
            rows.append(f"| {names} | {_default(field)} | {description} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
