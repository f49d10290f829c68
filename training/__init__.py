"""Training pipeline that produces each ``models/<model_version>/`` directory.

One entry script per task (``python -m training.train``, ``python -m training.evaluate``);
one module per step (load data, preprocess, train, calibrate, export, evaluate).
The model input format and the ONNX runner live in ``intent`` (shared with ``serving``).
This package never imports the web layer.
"""
