"""Front ends: HTTP, Telegram, Discord. They never import each other (import-linter enforces it)."""
