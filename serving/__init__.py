"""Intent inference: the model, its Ray Serve deployment and its HTTP routes.

- The model itself runs through ``intent.runner`` (shared with training and the benchmarks);
  ``models/`` (LATEST, the versions, the model cards, the promotion gate) belongs to
  ``intent.model_store``, which serving only calls.
- ``deployment`` / ``serve_app`` / ``serve_config.yaml``: the ``IntentClassifier`` Serve
  deployment (``@serve.batch``, autoscaling, ``user_config`` knobs) and its application builder;
  ``routing``: its request router (which replica gets a call); ``protocol``: what crosses Ray.
- ``rollout``: applies the Serve config to a cluster (``python -m serving.rollout``);
  ``ray_connect``: joins the cluster; ``deploy_status``: why the model is not serving.
- ``cli/``: the ``switchyard model`` commands, one module per job: ``versions`` (list, status,
  use), ``evaluate`` and ``comparison`` (compare, score), ``shadow``, and ``common`` (exit codes).
- ``client``: the front's micro-batching client (one deployment-handle call per group);
  ``shadow``: the shadow traffic it copies to a candidate (the Redis record, the counts).
- ``http`` / ``schemas`` / ``rate_limit`` / ``inference_metrics``: the ``/v1/inference`` routes.

This package imports ``core`` and ``intent`` only: never the database, never ``platform_api``.
"""
