"""The service root: the only package that imports both halves and wires them together.

- ``app``: ``create_app(settings, *, classifier=None)`` builds the FastAPI front hosting
  ``/v1`` (platform routes and the inference routes from ``serving.http``), ``/healthz``,
  ``/readyz`` and ``/metrics`` (``health``).
- ``middleware`` / ``http_metrics``: request ids, access logs and HTTP metrics of the front.
- ``cli``: the ``switchyard`` command; ``supervisor`` / ``processes``: ``switchyard run``.
"""
