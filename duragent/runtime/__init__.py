"""The composition root of ``duragent serve`` (``Runtime``, in ``server``).

``server`` lists every service and starts and stops them in order; ``fronts`` builds the
chat gateways, the scheduler and background jobs; ``startup`` reports what ``doctor`` would
say of the agents at start and shares out the open-file limit.
"""

from __future__ import annotations

from duragent.runtime.server import Runtime

__all__ = ["Runtime"]
