"""What ``duragent doctor`` reports: one finding per check result (shared by its check modules)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Finding", "Level"]


class Level(enum.StrEnum):
    """How bad a finding is."""

    OK = "ok"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Finding:
    """One result of a check."""

    level: Level
    check: str
    message: str
    fix: str | None = None
