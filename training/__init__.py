"""Training pipeline that produces each ``models/<model_version>/`` directory.

Four entry scripts: ``python -m training.train`` (data, fine-tuning, calibration, int8 export,
test-split scores, the model card), ``python -m training.evaluate`` (a model directory
scored on a JSONL file or a rebuilt split), ``python -m training.route`` (two trained
directories paired behind a language check as one routed version) and ``python -m
training.trim`` (a new version with the vocabulary cut to the languages served, through
``vocabulary``). One module per step:

- data: ``build_corpus`` (the YAML templates to ``data/corpus.jsonl``), ``sources`` (the
  corpus, the hand-written rows, Bitext), ``splits`` and ``dataset`` (group-aware splits, the
  near-duplicate filter), ``labels``;
- the model: ``modeling`` (fine-tuning; optional layer cut and distillation from a teacher),
  ``calibrate`` (temperature scaling), ``baseline`` (TF-IDF + logistic regression);
- int8 export, one scheme (the shipped one): ``export`` (ONNX export, int8 per-row word
  embeddings), ``channelwise`` (fixed activation scales per channel folded into the weights),
  ``feed_forward`` and ``onnx_graph`` (the graph reads and rewrites it relies on);
- evaluation: ``evaluate`` and ``plots`` (the metrics themselves are ``intent.evaluation``'s);
- ``cli_args``: the argument parser of the scripts.

The model input format and the ONNX runner live in ``intent`` (shared with ``serving``).
This package never imports the web layer.
"""
