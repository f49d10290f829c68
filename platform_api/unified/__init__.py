"""The unified API engine: resource maps (``resources.yaml``) run by one generic pipeline."""
