"""Context-window management: token counting, render budget (Layer 2) and loop budget (Layer 3).

- ``tokens``: exact counts with tiktoken (offline encodings) or a calibrated estimate, cached
  per message.
- ``window``: the effective context window of a model.
"""

from __future__ import annotations

from duragent.context.tokens import TokenCounter, counter_for_model, encoding_for_model

__all__ = ["TokenCounter", "counter_for_model", "encoding_for_model"]
