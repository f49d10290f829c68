"""The integration platform and the service's composition root.

- ``settings``: the one configuration object (``get_settings()``).
- ``app``: ``create_app()`` builds the FastAPI front that hosts ``/v1`` (platform API and the
  inference routes from ``serving.http``), ``/healthz``, ``/readyz`` and ``/metrics``.
- ``api/``: routes (parse, authorize, call a service); ``services/``: queries and rules;
  ``models/``: SQLModel tables and their Create/Update/Public shapes; ``migrations/``: Alembic.
- ``jobs/``: RQ job functions and queues; ``cli``: the ``switchyard`` command.

This package never imports torch or onnxruntime.
"""
