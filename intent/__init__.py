"""The intent model as every part of the project runs it, below serving and training.

- ``text_format``: how a message and its history become the model's text pair.
- ``encoding``: the tokenizer of a model directory, and batches of token ids.
- ``runner``: ``IntentModel``, one ``models/<version>/`` directory under ONNX Runtime
  (length-grouped runs, calibrated softmax).
- ``language`` and ``routed``: a routed version, two model directories behind a language
  check (English to one, the other languages to the other); ``open_model`` opens either kind.
- ``session_source``: the graph ONNX Runtime loads for a model file, rewritten where needed
  with the same results: ``int8_kernels`` (exact int8 products on x86 CPUs without VNNI,
  weights served unsigned where ONNX Runtime's signed kernel clips) and ``attention_mask``
  (padding's attention scores filled with a value Softmax handles at full speed).
  ``runner`` and ``int8_kernels`` are the only importers of onnxruntime.
- ``model_store``: ``models/`` itself: ``LATEST``, the versions, reading and writing model
  cards, and its rules (the promotion gate, forced promotions, keep two versions).
- ``evaluation``: accuracy, macro-F1, per-label P/R/F1 and ECE (numpy only), the evaluation
  data reader and the field-set entries of model cards (``switchyard model score``).

Serving, evaluation, the notebook and the benchmarks all run the model through ``runner``
(opened by ``routed.open_model``), so the model card's int8 numbers come from the code that
serves. Imports nothing of ours.
"""
