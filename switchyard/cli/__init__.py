"""The ``switchyard`` command: the root that registers every command group.

``service`` (run, status, worker, scheduler) lives here; the platform's groups come from
``platform_api.cli`` and the model group (``shadow`` included) from the ``serving.cli``
package.
"""

from __future__ import annotations

import typer

from platform_api.cli import console_users, db, integrations, keys, sync, tokens, webhooks
from serving import cli as model_cli
from switchyard.cli import service

app = typer.Typer(
    name="switchyard",
    help="Intent inference and a unified API over WMS and CRM systems.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
service.register(app)
webhooks.register(app)
app.add_typer(db.app, name="db")
app.add_typer(tokens.app, name="tokens")
app.add_typer(console_users.app, name="console-users")
app.add_typer(keys.app, name="keys")
app.add_typer(integrations.app, name="integrations")
app.add_typer(sync.app, name="sync")
app.add_typer(model_cli.app, name="model")
