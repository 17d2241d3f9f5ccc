"""Tools the model can call (bash, web, memory, session, CLI tools) and the policy that gates them.

Lower than ``session``: tools that need a runtime service take a Protocol port that
``runtime`` injects. (Populated by the agentic-loop work; see specs/.)
"""
