"""Sync jobs: which unified resources to copy for an account, the runs that copy them (RQ
jobs on the ``sync`` queue), and the cache of returns those runs keep.

- ``jobs``: creating, listing and deleting jobs and runs (validation of resource graphs).
- ``runner``: executing a run through the same unified engine as live calls.
- ``cache``: the returns cache and its reads.
"""
