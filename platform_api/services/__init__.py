"""Business rules and queries, one module per resource; routes call these."""
