"""The integration platform: installed integrations, accounts, link tokens, the unified API,
webhooks and their jobs.

- ``api/``: routes (parse, authorize, call a service); ``services/``: queries and rules;
  ``tables/``: SQLModel tables and their Create/Update/Public shapes; ``migrations/``: Alembic.
- ``integrations/``: the catalog of integration files; ``unified/``: the engine that runs them.
- ``webhooks/`` and ``jobs/``: delivery, RQ job functions and queues; ``cli``: its commands.
- ``db`` / ``redis_conn`` / ``crypto``: the database, Redis and credential encryption.

This package never imports torch, onnxruntime or ``serving``.
"""
