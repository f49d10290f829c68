"""Integrations as data: the catalog of integration files (``catalog``) and how an account's
provider credentials reach its provider (``provider_access``)."""
