"""Parse an argument dataclass, accepting ``--base-model`` as well as ``--base_model``."""

from __future__ import annotations

import sys
from typing import Any


def parse_args(dataclass_type: Any, argv: list[str] | None = None) -> Any:
    """One dataclass instance from the command line (help text comes from field metadata)."""
    from transformers import HfArgumentParser

    argv = list(sys.argv[1:] if argv is None else argv)
    normalized = []
    for token in argv:
        if token.startswith("--"):
            name, sep, value = token[2:].partition("=")
            token = "--" + name.replace("-", "_") + sep + value
        normalized.append(token)
    (args,) = HfArgumentParser(dataclass_type).parse_args_into_dataclasses(args=normalized)
    return args
