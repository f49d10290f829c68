"""Intent inference: the model, its Ray Serve deployment and its HTTP routes.

- The model itself runs through ``intent.runner`` (shared with training and the benchmarks).
- ``deployment`` / ``serve_app`` / ``serve_config.yaml``: the ``IntentClassifier`` Serve
  deployment (``@serve.batch``, autoscaling, ``user_config`` knobs) and its application builder;
  ``routing``: its request router (which replica gets a call).
- ``rollout``: applies the Serve config to a cluster (``python -m serving.rollout``);
  ``ray_connect``: joins the cluster; ``cli``: the ``switchyard model`` commands.
- ``client``: the front's micro-batching client (one deployment-handle call per group).
- ``http`` / ``schemas`` / ``rate_limit`` / ``inference_metrics``: the ``/v1/inference`` routes.

This package imports ``core`` and ``intent`` only: never the database, never ``platform_api``.
"""
