"""HTTP layer: dependencies (``deps``) and one router module per resource (``routes/``)."""
