"""The README and the pages of docs/ tell the truth: the configuration table, the commands,
the links between them."""

from __future__ import annotations

import re
from pathlib import Path

from core.settings import Settings
from core.settings_doc import env_names, markdown_table

ROOT = Path(__file__).resolve().parent.parent
README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
README_MAX_LINES = 300

_FENCED_BLOCK = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _link_targets(markdown: str) -> list[str]:
    """Every link and image target of a Markdown text, outside code."""
    prose = _INLINE_CODE.sub("", _FENCED_BLOCK.sub("", markdown))
    return _LINK.findall(prose)


def _relative_targets(page: Path) -> list[tuple[str, Path]]:
    """(target as written, the file it names) for each relative link of a page."""
    found = []
    for target in _link_targets(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue  # a URL (http:, mailto:) or an anchor on the same page
        path = target.split("#", 1)[0].split("?", 1)[0]
        found.append((target, (page.parent / path).resolve()))
    return found


def test_configuration_page_documents_every_setting() -> None:
    missing = [
        env_names(name, field)[0]
        for name, field in Settings.model_fields.items()
        if f"`{env_names(name, field)[0]}`" not in CONFIGURATION
    ]
    assert missing == []


def test_configuration_page_table_is_current() -> None:
    assert markdown_table() in CONFIGURATION


def test_readme_names_the_two_commands_the_makefile_has() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("run", "test"):
        assert f"make {target}" in README
        assert f"\n{target}:" in makefile


def test_readme_is_at_most_300_lines() -> None:
    assert len(README.splitlines()) <= README_MAX_LINES


def test_readme_keeps_the_tour_section_with_its_markers() -> None:
    section = README.split("\n## A five-minute tour\n", 1)
    assert len(section) == 2, "the README has no '## A five-minute tour' section"
    body = section[1].split("\n## ", 1)[0]
    start, end = body.find("<!-- tour:start -->"), body.find("<!-- tour:end -->")
    assert 0 <= start < end


def test_docs_folder_holds_the_pages_checked_below() -> None:
    assert ROOT / "docs" / "configuration.md" in DOCS


def test_relative_links_point_at_files_that_exist() -> None:
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in [README_PATH, *DOCS]
        for target, path in _relative_targets(page)
        if not path.exists()
    ]
    assert broken == []


def test_readme_links_every_docs_page() -> None:
    linked = {path for _, path in _relative_targets(README_PATH)}
    unlinked = [str(page.relative_to(ROOT)) for page in DOCS if page.resolve() not in linked]
    assert unlinked == []


def test_link_targets_skip_code_and_read_images() -> None:
    text = "\n".join(
        [
            "[a page](docs/a.md) and ![a picture](img/b.png) and [a site](https://example.com)",
            "`[not a link](in-code.md)`",
            "```",
            "[not a link either](in-a-block.md)",
            "```",
            "  ```yaml",
            "  [nor this](in-an-indented-block.md)",
            "  ```",
        ]
    )
    assert _link_targets(text) == ["docs/a.md", "img/b.png", "https://example.com"]
