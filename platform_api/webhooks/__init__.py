"""Webhook delivery: signing, target checks, retry rules, attempts, the dispatcher and its kick.

The event catalog is ``platform_api.event_types``; recording an event is
``services.events.record_event``; the delivery task the workers run is ``tasks.webhooks``.
"""
