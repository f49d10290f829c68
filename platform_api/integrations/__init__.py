"""Integrations as data: the provider catalog and how an account's credentials are applied."""
