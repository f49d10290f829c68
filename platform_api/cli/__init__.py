"""The integration platform's command groups (``db``, ``tokens``, ``integrations``,
``dispatcher``, ``sync``); ``switchyard.cli`` registers them under the ``switchyard`` command."""
