"""Intent inference: the model, its Ray Serve deployment and its HTTP routes.

- ``model``: loads a ``models/<version>/`` directory (ONNX Runtime int8 + tokenizer) and
  predicts calibrated probabilities; the only module that imports onnxruntime.
- ``deployment`` / ``serve_app`` / ``serve_config.yaml``: the ``IntentClassifier`` Serve
  deployment (``@serve.batch``, autoscaling, ``user_config`` knobs) and its application builder.
- ``rollout``: applies the Serve config to a cluster (``python -m serving.rollout``);
  ``ray_connect``: joins the cluster; ``cli``: the ``switchyard model`` commands.
- ``client``: the front's micro-batching client (one deployment-handle call per group).
- ``http`` / ``schemas`` / ``rate_limit`` / ``inference_metrics``: the ``/v1/inference`` routes.

This package imports ``core`` only: never the database, never ``platform_api``.
"""
