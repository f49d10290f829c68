"""The operator console (``/console``): server-rendered pages over the platform's services.

Jinja2 templates in ``templates/`` and one stylesheet in ``static/``, served by the app itself
(no CDN, no script). Operators are created with ``switchyard console-users``; a page shows
only the environments its operator was given (docs/console.md).
"""
