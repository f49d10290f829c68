"""Training pipeline that produces each ``models/<model_version>/`` directory.

One entry script per task (``python -m training.train``, ``python -m training.evaluate``);
one module per step (load data, preprocess, train, calibrate, export, evaluate).
``text_format`` is shared with ``serving`` so both encode a conversation the same way.
This package never imports the web layer.
"""
