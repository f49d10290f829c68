"""The shared kernel both halves stand on; it imports nothing of ours.

- ``settings``: the one configuration object (``get_settings()``); ``settings_doc`` renders
  its table for docs/configuration.md.
- ``errors``: the contract's error shape and the app's exception handlers.
- ``request_context``: the request id of the request being served; ``log_config``: structlog.
- ``gc_tuning``: freezing the start-up heap out of the garbage collector's way.
"""
