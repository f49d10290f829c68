"""Sync runs call the same provider fakes as the unified API's tests."""

from tests.platform_api.unified.conftest import upstream_for

__all__ = ["upstream_for"]
