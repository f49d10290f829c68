"""``switchyard model ...``: the model group's commands, one module per job.

- ``versions``: ``list`` the versions under the models directory, ``status`` (the one served)
  and ``use`` (switch it, behind the promotion gate of ``intent.model_store``).
- ``evaluate``: ``compare`` and ``score``: run models in this process over a data file, through
  ``intent.runner`` as the replicas do.
- ``comparison``: what changed between two models' predictions, and the tables that show it.
- ``shadow``: ``shadow``: a candidate sees a sample of live traffic, compared.
- ``common``: the exit codes and the error path the commands share.

What ``models/`` holds (LATEST, the cards, the promotion and keep-two rules) is
``intent.model_store``'s; these modules only call it.
"""

from __future__ import annotations

import typer

from serving.cli import evaluate, shadow, versions

app = typer.Typer(
    help="Model versions: list, compare and score them; show and switch the served one."
)
# In this order in ``switchyard model --help``.
app.command("list")(versions.list_versions)
app.command("status")(versions.status)
app.command("use")(versions.use)
app.command("compare")(evaluate.compare)
app.command("score")(evaluate.score)
app.command("shadow")(shadow.shadow)
