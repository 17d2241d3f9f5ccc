"""duragent: a durable, actor-based runtime for AI chat agents.

An agent is a folder of YAML and Markdown; every conversation is a session actor whose
history survives crashes; every LLM call is fitted to the model's context window. See
``specs/`` for the architecture and README.md for use.
"""

from __future__ import annotations

import logging

__version__ = "0.1.0"

__all__ = ["__version__"]

logging.getLogger("duragent").addHandler(logging.NullHandler())
