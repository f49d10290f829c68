"""Queue tasks: the functions RQ workers run (one module per family), at the top of the
platform's layers.

Below them, code hands work to the queues by path (``platform_api.queueing.task_paths``);
``switchyard worker`` imports every module here before it forks, and runs each one's optional
``preload()``. A "queue task" is an RQ job; a customer's "sync job" is ``platform_api.sync``.
"""
