"""The hosted connect page (``/connect-account``) and the link library (``/connect.js``).

Plain HTML, CSS and JavaScript in ``static/``, served by the app itself: no build step, no
CDN. The page talks to the ``/connect-account/session`` JSON endpoints with the link token;
back from an OAuth sign-in it redeems its one-time result id at ``/connect-account/oauth/result``
and reports only that answer to its opener.
"""
