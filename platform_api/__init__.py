"""The integration platform: installed integrations, integrated accounts, link tokens and the
connect flow, the unified API, sync jobs, webhooks, and the queue tasks that run them.

Its parts stand in layers, each importing only its own layer and those below it
(``tests/test_package_boundaries.py`` holds the list and checks it), from the bottom:

- foundation: ``ids``, ``crypto`` (credential encryption), ``db``, ``egress`` (the outbound
  guard), ``redis_breaker``, ``pagination``, ``event_types`` (the event catalog),
  ``queueing/`` (queue names and clients, the rq-scheduler, task paths), ``connect_page/``
  (the page's static files);
- ``integrations/``: the catalog of integration files and how provider credentials apply;
- ``tables/``: SQLModel tables and their Create/Update/Public shapes;
- ``unified/``: the engine that runs resource maps;
- ``webhooks/``: delivery (signing, target checks, retries, the dispatcher);
- ``services/``: queries and rules, one module per resource;
- ``sync/``: sync jobs, runs, cron triggers and the returns cache;
- ``tasks/``: the queue tasks (RQ job functions), and ``jobs/``, their legacy paths;
- ``api/`` (routes: parse, authorize, call a service), ``cli/`` (commands) and
  ``migrations/`` (Alembic).

This package never imports torch, onnxruntime or ``serving``.
"""
