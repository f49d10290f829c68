"""The unified API engine: provider manifests (``resources.yaml``) run by one generic pipeline."""
