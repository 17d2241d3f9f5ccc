"""Front ends: HTTP, Telegram, Discord. They never import each other (import-linter enforces it).

What they share (delivery, the outbound port, waiting for a turn) is ``duragent.frontkit``,
a layer below them that the scheduler uses too.
"""
