"""The README's configuration table and commands tell the truth."""

from __future__ import annotations

from pathlib import Path

from core.settings import Settings
from core.settings_doc import env_names, markdown_table

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_readme_documents_every_setting() -> None:
    missing = [
        env_names(name, field)[0]
        for name, field in Settings.model_fields.items()
        if f"`{env_names(name, field)[0]}`" not in README
    ]
    assert missing == []


def test_readme_configuration_table_is_current() -> None:
    assert markdown_table() in README


def test_readme_names_the_two_commands_the_makefile_has() -> None:
    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    for target in ("run", "test"):
        assert f"make {target}" in README
        assert f"\n{target}:" in makefile
