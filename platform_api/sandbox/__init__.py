"""The sandbox upstream: a small demo store + CRM API with seeded data.

`switchyard run` serves it on ``sandbox_host:sandbox_port`` so a fresh machine can connect a
``sandbox`` / ``sandbox_crm`` account and make real unified calls. Its API is deliberately
not the unified shape (upper-case statuses, amounts in cents, its own cursor and error body),
so the tour shows the mapping at work.
"""
