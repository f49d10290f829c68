"""Intent inference: the model, its Ray Serve deployment and its HTTP routes.

- ``model``: loads a ``models/<version>/`` directory (ONNX Runtime int8 + tokenizer) and
  predicts calibrated probabilities; the only module that imports onnxruntime.
- ``deployment`` / ``app`` / ``serve_config.yaml``: the ``IntentClassifier`` Serve deployment
  (``@serve.batch``, autoscaling, ``user_config`` knobs) and the application builder.
- ``client``: the front's micro-batching client (one deployment-handle call per group).
- ``http`` / ``schemas`` / ``rate_limit`` / ``metrics``: the ``/v1/inference`` routes.
- ``launch`` / ``cli``: deploy onto Ray; ``switchyard model`` commands.

This package never imports the database.
"""
