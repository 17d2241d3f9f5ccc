"""Scheduled jobs (at / every / cron with time zones) that run turns and deliver results.

A front end like the gateways: it calls the turn runner and never imports a gateway; delivery
goes through the kit's ``OutboundPort`` and ``Delivery`` (``duragent.frontkit``).
(Populated by the scheduler work; see specs/.)
"""
