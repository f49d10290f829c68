"""Business rules and queries, one module per resource; routes, sync and the queue tasks call
these.

- Accounts reaching their provider: ``accounts`` (the integrated account and its provider
  credentials), ``provider_connection`` (opens its provider connection) and
  ``provider_connection_cache``, ``oauth_client`` and ``oauth_refresh``, then ``unified`` (the
  unified and proxy calls, logged).
- The connect flow: ``link_tokens``, ``connect_flow`` and its OAuth leg ``connect_flow_oauth``.
- Events and webhooks: ``events`` (recording outbox events), ``webhooks`` (subscriptions).
"""
