"""``python -m duragent`` runs the CLI."""

from __future__ import annotations

from duragent.cli.main import main

main()
