"""The sandbox upstream: a fake provider, not part of the platform.

A small demo store + CRM API with seeded data (``data``), its HTTP API (``app``) and an OAuth
2.0 authorization server (``oauth``), so the tests, the README tour and the benchmarks have a
provider to connect to. `switchyard run` serves it on ``sandbox_host:sandbox_port``
(``python -m sandbox``) so a fresh machine can connect a ``sandbox`` / ``sandbox_crm`` account
and make real unified calls.

The platform only reaches it over HTTP, like any provider: nothing in ``platform_api`` imports
it, and it imports nothing of ours but ``core`` (its settings). Its API is deliberately not the
unified shape (upper-case statuses, amounts in cents, its own cursor and error body), so the
tour shows the mapping at work.
"""
