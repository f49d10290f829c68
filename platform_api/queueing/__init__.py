"""The bottom of the queue machinery, which every layer that hands work to RQ may import:
queue names and clients (``queues``), the rq-scheduler the service stores schedules with
(``scheduler``), and the dotted paths of the queue task functions (``task_paths``).

The functions themselves live in ``platform_api.tasks``, at the top: they call into
``sync``, ``services`` and ``webhooks``, which enqueue them here by path only.
"""
