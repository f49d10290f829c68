"""Webhook delivery: event catalog, signing, target checks, retry rules, the dispatcher."""
