"""What the ``switchyard model`` commands share: their exit codes and how they fail."""

from __future__ import annotations

import typer

# Exit codes: 2 for a missing version or unreadable input, 3 when the promotion gate refuses.
EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3


def fail(message: str) -> typer.Exit:
    """Print ``message`` on stderr; the exit (code 2) for the caller to raise."""
    typer.echo(message, err=True)
    return typer.Exit(EXIT_BAD_INPUT)
