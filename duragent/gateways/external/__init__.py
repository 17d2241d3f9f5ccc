"""External gateways: chat platforms served by a child process speaking the reference's protocol.

A gateway written for the Rust reference runs unchanged: JSON lines (``protocol``, version
``v1alpha1``) over the child's stdin and stdout. ``launch`` resolves and starts the program,
``supervisor`` keeps it running by its restart policy and reads its events (``lines``: 1 MiB
cap), ``translate`` turns events into the kit's values, ``outbound`` is the kit's port as
commands, ``service`` is the runtime's service per gateway and ``assemble`` builds them on the
kit's chat front. Never imports another front end. See ``specs/…external-gateways.md``.
"""

from __future__ import annotations

from duragent.gateways.external.assemble import ExternalGateways, build_external_gateway
from duragent.gateways.external.service import ExternalGateway, Timings

__all__ = ["ExternalGateway", "ExternalGateways", "Timings", "build_external_gateway"]
